/* cuda.c: the --backend=cuda driver: --emit-cuda prints the kernels, --emit-ptx writes
 * NVRTC's PTX to -o, otherwise the PTX goes into a .so/.o with the host routines. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "jit.h"

static bool toolkit(void) {
  if (cuda_available()) return true;
  fprintf(stderr, "tdslc: error: cuda backend unavailable: tdslc was built without the CUDA toolkit\n");
  return false;
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "tdslc: error: cannot write '%s'\n", path);
    return 2;
  }
  fputs(text, f);
  if (fclose(f)) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", path, strerror(errno));
    return 2;
  }
  return 0;
}

/* sm_NN with an optional a/f suffix (sm_90a): anything else would reach NVRTC as an
 * option error. */
static bool arch_ok(const char *arch) {
  if (strncmp(arch, "sm_", 3) || !isdigit((unsigned char)arch[3])) return false;
  const char *p = arch + 3;
  while (isdigit((unsigned char)*p)) p++;
  if (*p == 'a' || *p == 'f') p++;
  return *p == 0;
}

static const char *arch_of(const CudaOpts *o) { return o->arch ? o->arch : "sm_80"; }

/* --emit-header for a cuda model: the CPU model's header (backends/gccjit/emit_c.c),
 * whose resolver also answers NAME_cuda_ptx and NAME_cuda_meta, so that a statically
 * linked cuda object opens through tdsl_open_resolved too. */
static int cuda_header(IrModule *m, const CudaOpts *o) {
  static const char *const extra[] = {"cuda_ptx", "cuda_meta", NULL};
  FILE *f = fopen(o->header, "w");
  if (!f) {
    fprintf(stderr, "tdslc: error: cannot write '%s'\n", o->header);
    return 2;
  }
  emit_header(f, m, jit_name(o->model), extra);
  if (fclose(f)) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", o->header, strerror(errno));
    return 2;
  }
  return 0;
}

/* --arch is sm_NN; --tf32 needs tensor cores with TF32 (sm_80 and later). */
static bool check_arch(const CudaOpts *o) {
  if (!arch_ok(arch_of(o))) {
    fprintf(stderr, "tdslc: error: bad --arch '%s' (expected sm_NN, e.g. sm_80)\n", arch_of(o));
    return false;
  }
  if (o->tf32 && atoi(arch_of(o) + 3) < 80) {
    fprintf(stderr, "tdslc: error: --tf32 needs --arch=sm_80 or newer (got %s)\n", arch_of(o));
    return false;
  }
  return true;
}

static CudaPlan *plan(Arena *a, IrModule *m, const CudaOpts *o) {
  return cuda_plan(a, m, &(CudaPlanOpts){.tf32 = o->tf32, .sm = atoi(arch_of(o) + 3), .strict_fp = o->strict_fp});
}

int cuda_backend(Arena *a, IrModule *m, const CudaOpts *o) {
  if (!check_arch(o)) return 2;
  CudaPlan *p = plan(a, m, o);
  if (o->header) {
    int rc = cuda_header(m, o);
    if (rc) return rc;
  }
  if (o->out == CUDA_OUT_SOURCE) {
    fputs(p->src, stdout);
    return 0;
  }
  if (!toolkit()) return 2;
  char *ptx = cuda_ptx(a, p->src, arch_of(o));
  if (!ptx) return 2; /* internal errors (reported), not the input's */
  if (o->out == CUDA_OUT_PTX) return write_text(o->output, ptx);
  return cuda_host_file(a, m, p, ptx, jit_name(o->model), o->opt_level, o->output, o->object) ? 0 : 2;
}

bool cuda_can_run(void) {
  const char *emu = getenv("TDSL_CUDA_EMULATE");
  return (emu && *emu) || toolkit();
}

gcc_jit_result *cuda_compile_mem(Arena *a, IrModule *m, const CudaOpts *o, gcc_jit_context **ctx_out) {
  /* The runtime's emulation (TDSL_CUDA_EMULATE) runs host-compiled kernels: it needs no
   * PTX, so it works in a build without the toolkit too. */
  if (!check_arch(o)) return NULL;
  const char *emu = getenv("TDSL_CUDA_EMULATE");
  bool emulated = emu && *emu && !cuda_available();
  if (!emulated && !toolkit()) return NULL;
  CudaPlan *p = plan(a, m, o);
  char *ptx = emulated ? "// emulated: tdslc was built without the CUDA toolkit\n"
                       : cuda_ptx(a, p->src, arch_of(o));
  return ptx ? cuda_host_mem(a, m, p, ptx, jit_name(o->model), o->opt_level, ctx_out) : NULL;
}
