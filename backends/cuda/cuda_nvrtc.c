/* cuda_nvrtc.c: CUDA C -> PTX with NVRTC. Built with -DTDSL_HAVE_NVRTC when the
 * Makefile finds the CUDA toolkit; otherwise every compile reports that the toolkit is
 * missing (the rest of tdslc, --emit-cuda included, works the same). */
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

#ifdef TDSL_HAVE_NVRTC
#include <nvrtc.h>

bool cuda_available(void) { return true; }

/* The PTX target: compute_NN for --arch=sm_NN (PTX is for a virtual architecture; the
 * driver finishes it for the GPU it runs on). */
static char *virtual_arch(Arena *a, const char *arch) {
  const char *nn = !strncmp(arch, "sm_", 3) ? arch + 3 : arch;
  return arena_printf(a, "--gpu-architecture=compute_%s", nn);
}

static char *fail(nvrtcProgram *prog, nvrtcResult r, const char *what) {
  fprintf(stderr, "tdslc: internal error: NVRTC %s failed: %s\n", what, nvrtcGetErrorString(r));
  size_t n = 0;
  if (prog && nvrtcGetProgramLogSize(*prog, &n) == NVRTC_SUCCESS && n > 1) {
    char *log = malloc(n);
    if (log && nvrtcGetProgramLog(*prog, log) == NVRTC_SUCCESS) fprintf(stderr, "%s\n", log);
    free(log);
  }
  if (prog) nvrtcDestroyProgram(prog);
  return NULL;
}

char *cuda_ptx(Arena *a, const char *src, const char *arch) {
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, "tdsl_model.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return fail(NULL, r, "program creation");
  /* No fast math: the numbers must match the CPU backend's. */
  /* 177: the unused helpers of the prelude. */
  const char *opts[] = {virtual_arch(a, arch), "--std=c++17", "--diag-suppress=177"};
  r = nvrtcCompileProgram(prog, 3, opts);
  if (r != NVRTC_SUCCESS) return fail(&prog, r, "compilation of the generated kernels");
  size_t n = 0;
  if ((r = nvrtcGetPTXSize(prog, &n)) != NVRTC_SUCCESS) return fail(&prog, r, "PTX size");
  char *ptx = arena_alloc(a, n + 1);
  if ((r = nvrtcGetPTX(prog, ptx)) != NVRTC_SUCCESS) return fail(&prog, r, "PTX retrieval");
  nvrtcDestroyProgram(&prog);
  return ptx;
}

#else

bool cuda_available(void) { return false; }

char *cuda_ptx(Arena *a, const char *src, const char *arch) {
  (void)a, (void)src, (void)arch;
  fprintf(stderr, "tdslc: error: cuda backend unavailable: tdslc was built without the CUDA toolkit\n");
  return NULL;
}

#endif
