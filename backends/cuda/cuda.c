/* cuda.c: the --backend=cuda driver: --emit-cuda prints the kernels, --emit-ptx writes
 * NVRTC's PTX to -o, otherwise the PTX goes into a .so/.o with the host routines. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "cuda.h"

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
  return fclose(f) ? 2 : 0;
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

static const char *arch_of(Ctx *c) { return c->opt.arch ? c->opt.arch : "sm_80"; }

int cuda_backend(Ctx *c, IrModule *m, const char *base) {
  Options *o = &c->opt;
  if (!arch_ok(arch_of(c))) {
    fprintf(stderr, "tdslc: error: bad --arch '%s' (expected sm_NN, e.g. sm_80)\n", arch_of(c));
    return 2;
  }
  CudaPlan *p = cuda_plan(&c->arena, m);
  if (o->action == ACT_EMIT_CUDA) {
    fputs(p->src, stdout);
    return 0;
  }
  if (!toolkit()) return 2;
  char *ptx = cuda_ptx(&c->arena, p->src, arch_of(c));
  if (!ptx) return 1;
  if (o->action == ACT_EMIT_PTX) return write_text(o->output ? o->output : arena_printf(&c->arena, "%s.ptx", base), ptx);
  const char *out = o->output ? o->output : arena_printf(&c->arena, "%s.%s", base, o->object ? "o" : "so");
  return cuda_host_file(&c->arena, m, p, ptx, o->opt_level, out, o->object) ? 0 : 1;
}

gcc_jit_result *cuda_compile_mem(Ctx *c, IrModule *m, gcc_jit_context **ctx_out) {
  /* The runtime's emulation (TDSL_CUDA_EMULATE) runs host-compiled kernels: it needs no
   * PTX, so it works in a build without the toolkit too. */
  if (!arch_ok(arch_of(c))) {
    fprintf(stderr, "tdslc: error: bad --arch '%s' (expected sm_NN, e.g. sm_80)\n", arch_of(c));
    return NULL;
  }
  const char *emu = getenv("TDSL_CUDA_EMULATE");
  bool emulated = emu && *emu && !cuda_available();
  if (!emulated && !toolkit()) return NULL;
  CudaPlan *p = cuda_plan(&c->arena, m);
  char *ptx = emulated ? "// emulated: tdslc was built without the CUDA toolkit\n"
                       : cuda_ptx(&c->arena, p->src, arch_of(c));
  return ptx ? cuda_host_mem(&c->arena, m, p, ptx, c->opt.opt_level, ctx_out) : NULL;
}
