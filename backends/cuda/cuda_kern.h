/* cuda_kern.h: what the kernel emitters of the CUDA backend share (not a public
 * interface). cuda_emit.c plans every kernel and emits the one-thread-per-point ones;
 * cuda_tile.c emits the kernels whose threads cooperate within a block (contractions
 * tiled through shared memory, reductions combined by warp shuffles). */
#ifndef TDSL_CUDA_KERN_H
#define TDSL_CUDA_KERN_H

#include "cuda.h"
#include "ir_c.h"

typedef struct E {
  CRender r;  /* renders into o */
  Arena *a;
  const IrModule *m;
  IrModule *mm;       /* the same, to clear the seq of fused routines */
  FILE *o;
  CudaPlan *p;
  char *arg;  /* per kernel: per buffer 0, 'b' or 'w' */
  bool *sym;  /* per kernel: symbol used */
  bool *dim;  /* per kernel: dynamic dimension (or flag) used */
  const Stmt *to_acc; /* a reduction in a register: this store accumulates into the local acc */
  long scratch;       /* bytes of scratch the split reductions need */
  Elem scratch_elem;  /* of the kernel being emitted */
  bool tf32;          /* fp32 contractions on TF32 tensor cores */
  bool strict;        /* --strict-fp: no reassociated reduction (CudaPlanOpts) */
  const Stmt *pending_fill; /* a fill of 0 not yet planned: the next nest may take it */
  char **txt;         /* the memstream behind o, and its length */
  size_t *len;
  size_t body_at;     /* where the current one-thread-per-point kernel's body begins */
} E;

static inline const IrBuf *cu_buf(const E *e, int b) { return VEC_AT(e->m->bufs, IrBuf, b); }
static inline const char *cu_ctype(Elem el) { return el == ELEM_F64 ? "double" : "float"; }

/* Roles of the loops of a nest's chain of perfectly nested loops. */
enum { SEQ, PAR, DROP /* the tile loop of a tiled chain loop: the tiled loop runs whole */ };

/* Kernel arguments: cu_begin_args, then mark what the kernel uses, then finish. */
void cu_begin_args(E *e);
void cu_use_stmt(E *e, const Stmt *s);
void cu_use_access(E *e, const Access *acc, bool write);
CudaKernel *cu_finish_kernel(E *e, bool scratch);
/* The comment, the signature and the opening brace. */
void cu_kernel_sig(E *e, const CudaKernel *k, const char *what);
/* The kernel's thread count is also times product p of dynamic dimensions. */
void cu_threads_times(E *e, CudaKernel *k, int p);
/* The signature, then t: the global thread index, below k->threads. */
void cu_kernel_head(E *e, const CudaKernel *k, const char *what);
/* The closing brace and the emulation entry; a one-thread-per-point kernel keeps its
 * body text (CudaKernel.body) for fused routines. */
void cu_kernel_tail(E *e, CudaKernel *k);
/* Declares the chain variables with par[i] == want from the linear index in the
 * variable v (modified): the innermost varies fastest, the outermost takes the rest. */
void cu_decompose(E *e, const Stmt **chain, int n, const int *par, int want, const char *v, int ind);
void cu_indent(E *e, int ind);
/* A reduction nest's sizes: its points (the PAR loops: cells) and the reduced points
 * of each (the SEQ loops), each a static factor times a product of dynamic dims (0:
 * static), and what the plan counts them as (a dynamic loop as IR_DYN_EXT_GUESS). */
typedef struct RedSize {
  long points, red;
  int pdext, rdext;
  long gpoints, gred;
} RedSize;

/* An extent for a kernel's comment: 12, 16*batch. */
const char *cu_ext_what(const E *e, long ext, int dext);
/* acc = the neutral element of st's accumulation (the cell's value while the C condition
 * one holds, unless one is NULL), then folds in the reduced points (the SEQ loops,
 * linearized) r = first, first + step, ... < z->red: a thread's share of a reduction
 * split across threads. */
void cu_strided_fold(E *e, const Stmt **chain, int n, const int *par, const Stmt *st, const RedSize *z, const char *first,
                     const char *step, const char *one);
/* The shared C rendering, with the to_acc store into the local acc. */
void cu_stmts(E *e, const PtrVec *body, int ind);

/* cuda_fuse.c: each routine whose kernels are all small, one thread per point, becomes
 * one single-block kernel (one launch instead of one per nest). */
void cu_fuse_routines(E *e);

/* The destination's cells over the chain loops in_cell are exactly its buffer's, each
 * once: sorted by coefficient, each loop's coefficient is the extent below it. */
bool cu_covers(const E *e, const Stmt **chain, int n, const bool *in_cell, const Access *dst);
/* Every load moves by 0 or 1 cell along var, and some load moves: 1; none moves: 0;
 * a load strides: -1. */
int cu_loads_along(const IrExpr *x, int var);

/* cuda_tile.c. Each returns false, emitting nothing, when the nest is not of its kind.
 * st is the nest's register store (its cell depends on the PAR loops alone). */
bool cu_contraction(E *e, const char *what, const Stmt **chain, int n, const int *par, const Stmt *st);
/* Whether cu_contraction would start the cells of st's destination from 0 in place of
 * the fill before it (it writes every cell and reads none). */
bool cu_contraction_takes(E *e, const Stmt **chain, int n, const int *par, const Stmt *st, const Stmt *fill);
bool cu_block_reduction(E *e, const char *what, const Stmt **chain, int n, const int *par, const Stmt *st,
                        const RedSize *z);

#endif
