/* shim.h: compiles tdslc's generated CUDA kernels (--emit-cuda) as host C, for
 * emulation without a GPU: cc -DTDSL_EMULATE -include shim.h -x c model.cu -shared -fPIC.
 * Each TDSL_EMU_ENTRY(k, call) defines tdsl_emu_k(params, grid, block), which runs every
 * thread of the grid one after the other, in reverse order: a kernel whose threads
 * depend on each other's order gives different numbers than the CPU backend. The
 * runtime calls it in place of cuLaunchKernel when TDSL_CUDA_EMULATE names the library. */
#include <math.h>

typedef struct tdsl_dim3 { unsigned x, y, z; } tdsl_dim3;
static tdsl_dim3 blockIdx, threadIdx, blockDim, gridDim;

#define TDSL_KERNEL static void
#define TDSL_DEV static inline __attribute__((unused))
#define TDSL_NAN NAN
#define TDSL_INF INFINITY
#define __restrict__ restrict
#define TDSL_EMU_ENTRY(name, call)                                          \
  void tdsl_emu_##name(void **p, unsigned grid, unsigned block);            \
  void tdsl_emu_##name(void **p, unsigned grid, unsigned block) {           \
    gridDim.x = grid;                                                       \
    blockDim.x = block;                                                     \
    gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;                    \
    for (unsigned bi = grid; bi-- > 0;)                                     \
      for (unsigned ti = block; ti-- > 0;) {                                \
        blockIdx.x = bi;                                                    \
        threadIdx.x = ti;                                                   \
        call;                                                               \
      }                                                                     \
  }
