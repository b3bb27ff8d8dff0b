/* cuda_tile.h: what the contraction kernels share (not a public interface).
 * cuda_tile.c recognizes a contraction, shapes its tiles and emits the FMA kernels;
 * cuda_mma.c emits the TF32 tensor-core kernels (--tf32) over the same plan. */
#ifndef TDSL_CUDA_TILE_H
#define TDSL_CUDA_TILE_H

#include "cuda_kern.h"

/* TF32 tiles: reduced points per step, and steps staged at once (cuda_mma.c). */
enum { MMA_BK = 32, MMA_STAGES = 3 };

/* The roles of a contraction's loops. */
enum { R_BATCH, R_M, R_N, R_K, R_NONE };

typedef struct Ct {
  const Stmt **chain;
  int n;
  int role[64];
  long ext[4];        /* points per role */
  const Access *a, *b; /* a reads the M loops, b the N loops */
  int bm, bn, bk, tm, tn;
  bool vec_a, vec_b;  /* float4 loads of a (b) along K (N) */
  bool a_kfast;       /* a's contiguous axis is K (else M) */
  bool b_nfast;       /* b's contiguous axis is N (else K) */
  long splits, kc;    /* split-K: splits blocks per tile, each over kc reduced points */
  const Stmt *guard;  /* the padding guards around the store (S_IF), or NULL */
  bool fresh;         /* the cells start from 0 (the fill before was taken), not read */
  char gside[32];     /* per guard: 'A' or 'B', the operand whose staging tests it */
  int dext[4];        /* per role: its extent is ext times this product of dynamic dims
                         (0: static), read at launch into eB, eM, eN, eK */
  long guess[4];      /* ext, a dynamic loop counted as IR_DYN_EXT_GUESS: what the plan
                         (tile shape, split-K, whether to tile) is chosen from */
  bool dyn;           /* some role is dynamic */
} Ct;

/* Declares the loop variables of a role from the linear index expression lin. */
void cu_ct_decomp(E *e, const Ct *c, int role, const char *lin, int ind);
/* Whether operand x (side S, its rows of role ro) is read at a fixed offset plus
 * sr * row + sk * reduced point: one loop of each role, static strides, no padding
 * guard of its side. */
bool cu_ct_affine(const Ct *c, const Access *x, int ro, char S, long *sr, long *sk);
/* "if (the guards of side S hold) " before a staged load, or nothing. */
void cu_ct_stage_guard(E *e, const Ct *c, char S);
/* A role's extent in the kernel: a constant, or the variable (eM, ...) it is read into
 * at the block's start when dynamic; and as the kernel's description shows it. */
const char *cu_ct_ext(const E *e, const Ct *c, int role);
const char *cu_ct_what(const E *e, const Ct *c, int role);
/* The split-K part of the kernel's description ("" without). */
const char *cu_ct_splits(const E *e, const Ct *c);
/* The contraction's kernel: its arguments (the scratch buffer in place of the cells
 * under split-K over a static K), cooperative, a block per tile (and split). */
CudaKernel *cu_ct_kernel(E *e, const Ct *c, const Stmt *st);
/* After the signature and the kernel's own declarations: the dynamic extents, the
 * block's tile (m0, n0), batch entry and reduced points [kbeg, kend), and acc[] = 0. */
void cu_ct_block_start(E *e, const Ct *c, const Stmt *st);
/* The cells (or the split's partial sums) from acc[] in the mma accumulator layout, the
 * closing brace, and the split-K combine kernel. */
void cu_ct_block_end(E *e, const char *what, const Ct *c, const Stmt *st, CudaKernel *k);

/* cuda_mma.c: the TF32 kernel of the contraction (e->tf32, f32 operands). */
void cu_mma_contraction(E *e, const char *what, Ct *c, const Stmt *st);

#endif
