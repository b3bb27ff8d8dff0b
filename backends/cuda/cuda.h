/* cuda.h: the CUDA backend. The loop IR becomes CUDA C kernels (one per top-level
 * loop nest or fill of each function), compiled by NVRTC to PTX; the PTX is embedded
 * in a host module built by libgccjit whose routines launch the kernels through the
 * runtime (runtime/tdslrt_cuda.c). Sees only ir.h.
 *
 * A cuda model exports the symbols of a CPU model (NAME_fn_N, NAME_model_meta; its
 * instance's buffers are host mirrors of the device buffers) plus
 *   char NAME_cuda_ptx[]     the PTX text
 *   char NAME_cuda_meta[]    "tdslcuda 1", "scratch BYTES" when split reductions need
 *                            scratch memory, per buffer "buf ID BYTES" ("dbuf ID" for
 *                            a buffer over dynamic dimensions: the runtime sizes it
 *                            when the dims are set) and per kernel
 *                            "kernel ID NAME THREADS NARGS ARG..." where ARG is bN (a
 *                            buffer read), wN (a buffer written), sN (index symbol),
 *                            dN (dynamic dimension or flag N of the IR, an int) or x0
 *                            (the scratch buffer), followed, when the thread count
 *                            is THREADS times dynamic dimensions, by "tdims ID N DIM...",
 *                            by "tceil ID NUM DIV N DIM..." per factor
 *                            ceil(NUM * DIM... / DIV) it is also times (tiles over a
 *                            dynamic extent), and when it uses dynamic shared memory,
 *                            by "smem ID BYTES"
 * and reads from slots 0 and 1 of its instance header (set by the runtime at open, per
 * instance) the runtime's context and void (*launch)(void *ctx, int kernel).
 * A routine is a sequence of launch calls and calls of other routines. */
#ifndef TDSL_CUDA_H
#define TDSL_CUDA_H

#include <libgccjit.h>
#include <stdio.h>

#include "ir.h"

/* Threads per block; the runtime uses the same number. */
enum { CUDA_BLOCK = 256 };

typedef struct CudaArg {
  char kind;  /* 'b' buffer read only, 'w' buffer written, 's' index symbol, 'd' dynamic
               * dimension (IrModule.dims: a size or a flag), 'x' scratch */
  int index;
} CudaArg;

/* A factor of a kernel's thread count computed at launch: ceil(num * the product of
 * the dims' values / div); 0 when a dim is 0 (no launch). */
typedef struct CudaCeil {
  long num, div;
  int n;
  const int *dims;  /* IrModule.dims ids */
} CudaCeil;

typedef struct CudaKernel {
  int id;
  const char *name;   /* "k12" */
  long threads;       /* total threads; one per point of the parallel loops, or a
                         multiple of CUDA_BLOCK when coop; times the tdims below */
  int ntdims;         /* the thread count is threads times these dynamic dimensions' */
  int *tdims;         /* values at launch (IrModule.dims ids; a dynamic nest's) */
  int nceils;         /* and times each ceil(num * dims / div): a tile count over a */
  CudaCeil *ceils;    /* dynamic extent (a tiled contraction's grid) */
  bool coop;          /* the threads of a block cooperate (shared memory, barriers) */
  int min_blocks;     /* > 0: __launch_bounds__(256, n): registers capped so that n blocks fit on an SM */
  int smem;           /* bytes of dynamic shared memory (TDSL_DYN_SHARED) */
  const char *body;   /* one thread per point (not coop): the code of point t, which a
                         fused routine kernel runs too (cuda_fuse.c) */
  int nargs;
  CudaArg *args;
} CudaKernel;

/* One step of a host routine: launch a kernel or call another function. */
typedef struct CudaStep {
  bool call;
  int index;          /* kernel id, or function index */
} CudaStep;

typedef struct CudaPlan {
  PtrVec kernels;     /* CudaKernel* */
  PtrVec *steps;      /* per function: CudaStep* */
  char *src;          /* the CUDA C source of every kernel */
  char *meta;         /* tdsl_cuda_meta text */
} CudaPlan;

/* What the kernels may use: tf32: fp32 contractions on TF32 mma (needs sm >= 80);
 * sm: the target (--arch=sm_NN). */
typedef struct CudaPlanOpts {
  bool tf32;
  int sm;
  bool strict_fp; /* --strict-fp: every reduction in the CPU's order (no block reductions,
                     split reductions or split-K, which reassociate) */
} CudaPlanOpts;

/* backends/cuda/cuda_emit.c. A routine the plan runs as one kernel (cuda_fuse.c) is no
 * longer a list the runtime walks: the plan clears its IrFunc.seq. */
CudaPlan *cuda_plan(Arena *a, IrModule *m, const CudaPlanOpts *o);

/* backends/cuda/cuda_nvrtc.c: PTX for arch ("sm_80"), NULL after printing the NVRTC
 * log as an internal error (or that the toolkit is missing). */
bool cuda_available(void);
char *cuda_ptx(Arena *a, const char *src, const char *arch);

/* backends/cuda/cuda_host.c: the host module. */
bool cuda_host_file(Arena *a, const IrModule *m, const CudaPlan *p, const char *ptx, const char *name, int opt_level,
                    const char *path, bool object);
gcc_jit_result *cuda_host_mem(Arena *a, const IrModule *m, const CudaPlan *p, const char *ptx, const char *name,
                              int opt_level, gcc_jit_context **ctx_out);

/* backends/cuda/cuda.c: what the driver asks of the backend (the backend sees these
 * options and the IR, never the compiler context). */
typedef enum CudaOutput {
  CUDA_OUT_SOURCE,  /* --emit-cuda: the kernels' CUDA C on stdout */
  CUDA_OUT_PTX,     /* --emit-ptx: NVRTC's PTX to output */
  CUDA_OUT_LIBRARY, /* a .so (or a .o with object) to output */
} CudaOutput;

typedef struct CudaOpts {
  const char *arch;   /* --arch, "sm_80" when NULL */
  int opt_level;      /* the host module's -O */
  CudaOutput out;
  const char *output; /* CUDA_OUT_PTX, CUDA_OUT_LIBRARY: the file written */
  bool object;
  const char *header; /* --emit-header: its file, or NULL */
  const char *model;  /* the model's symbol prefix (--name; header names too), NULL: "tdsl" */
  bool tf32;          /* --tf32 */
  bool strict_fp;     /* --strict-fp (CudaPlanOpts) */
} CudaOpts;

/* --emit-cuda, --emit-ptx and -o for --backend=cuda; returns an exit status. */
int cuda_backend(Arena *a, IrModule *m, const CudaOpts *o);
/* For --run: whether it can compile (the toolkit, or the emulation: otherwise says why),
 * then compiles in memory, NULL after printing an error. */
bool cuda_can_run(void);
gcc_jit_result *cuda_compile_mem(Arena *a, IrModule *m, const CudaOpts *o, gcc_jit_context **ctx_out);

#endif
