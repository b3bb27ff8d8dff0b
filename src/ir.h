/* ir.h: the loop IR between assignments (graph.h) and code generators.
 *
 * A module is a set of buffers (one per tensor value or gradient; a flat array in
 * memory order batch, output, input), index symbols, and functions. A function body is
 * a list of statements: counted loops, padding guards, stores, buffer fills and calls.
 * Indices are affine forms over loop variables and index symbols, so the printer, the
 * C emitter and the gccjit backend all see the same thing, and bounds are easy to
 * reason about. Backends never look at graph.h. */
#ifndef TDSL_IR_H
#define TDSL_IR_H

#include <stdio.h>

#include "base.h"
#include "ops.h"
#include "tdsl_abi.h"

/* One term of an affine form: coef * var (var >= 0: loop variable; var < 0: the index
 * symbol number -1 - var), times the product of dynamic dimensions number dyn when dyn
 * is not 0 (ir_prod; a stride over dynamic axes). var is AFF_ONE only in such a scaled
 * term: a constant times a product. Static programs have dyn 0 everywhere. */
typedef struct Term {
  int var;
  long coef;
  int dyn;
} Term;
#define AFF_ONE (-0x40000000)

typedef struct Aff {
  long off;
  int n;
  Term *t;
} Aff;

typedef enum Elem { ELEM_F32, ELEM_F64 } Elem;

typedef struct IrInit {
  InitKind kind;
  double value;
  const double *values;
  int nvalues;
  const char *path;
  long long file_elems;
  const InitOp *ops;  /* INIT_EXPR: the program (ops.h) */
  int nops;
} IrInit;

typedef struct IrBuf {
  int id;
  const char *name;   /* "w", "w.grad", "t#12" for an anonymous tensor */
  Elem elem;
  long size;          /* number of cells (>= 1); times product dsize when dynamic */
  int dsize;          /* 0, or the product of its dynamic dims (ir_prod): the runtime
                       * allocates the buffer when the sizes are set */
  int rank;
  int nk[NKINDS];     /* axes per kind (KIND_*, memory order) */
  int *dims;          /* rank dims, memory order */
  const char **labels;/* rank labels (NULL entries when unlabeled) */
  int tensor_id;      /* seeds the uniform stream */
  TensorRole role;    /* printed as the metadata's `role` line */
  IrInit init;
} IrBuf;

typedef struct IrSym {
  int id;
  const char *name;
  int range;          /* 0 = unbounded; DIM_DYN(id): the current value of dimension id */
} IrSym;

/* A dynamic dimension (graph.h DimSym): its value is set at run time (tdsl_set_dim).
 * A join (njoin > 0, after the dims it joins) is the largest of dims join[], which
 * the runtime computes. A flag (after every size) is no size but what the runtime
 * derives from size `of`: 1 when it is not 1, else 0. A dynamic axis that broadcasts
 * when its run-time size is 1 (graph.h AxisIndex.dyn_bcast) has its index scaled by
 * that flag. */
typedef struct IrDim {
  int id;
  const char *name;   /* NULL for an anonymous `?` */
  bool flag;
  int of;             /* flag: the size it is derived from */
  int njoin;          /* a join: the ids of the dims it is the largest of */
  const int *join;
} IrDim;

/* A run-time check of dynamic sizes (graph.h DimCheck): every call fails with msg
 * unless size == expect, or size == 1 when or_one. size and expect are dimensions as
 * ints (static, or DIM_DYN of a size). */
typedef struct IrCheck {
  int size, expect;
  bool or_one;
  const char *msg;
} IrCheck;

/* A product of dynamic dimensions (ids of IrModule.dims, sorted, repeats allowed),
 * interned in IrModule.prods: product number k >= 1 is prods.items[k - 1]. */
typedef struct IrProd {
  int n;
  int *dims;
} IrProd;

/* What a dynamic extent counts for where a back end plans from sizes it cannot know (a
 * batch, typically): the CPU schedule's thresholds, the CUDA tile plans. */
enum { IR_DYN_EXT_GUESS = 256 };

typedef enum IrExprKind { X_CONST, X_LOAD, X_SYM, X_OP } IrExprKind;

/* One access of a buffer: the flat index plus, per axis, the axis index (for guards
 * and --check-bounds messages). */
typedef struct Access {
  int buf;
  Aff flat;
  int rank;
  Aff *axis;
} Access;

typedef struct IrExpr IrExpr;
struct IrExpr {
  IrExprKind kind;
  double value;   /* X_CONST */
  Access acc;     /* X_LOAD */
  int sym;        /* X_SYM */
  PrimOp op;      /* X_OP */
  IrExpr *a[3];
};

typedef enum StmtKind { S_LOOP, S_IF, S_STORE, S_FILL, S_CALL, S_COMMENT, S_KERNEL, S_PREFETCH, S_FENCE } StmtKind;

typedef struct Stmt Stmt;

/* A bound condition for padding: 0 <= aff < ext (times product dext when not 0). */
typedef struct Guard {
  Aff aff;
  long ext;
  int dext;
} Guard;

/* S_KERNEL (made only by the schedule pass, src/schedule.h): a contraction
 *   for i < ext[0], j < ext[1]: dst(i,j) += sum over k < ext[2] of A(i,k) * B(k,j)
 * where `store` is `dst =add mul(x, y)` with A = argument a_arg of the mul (it does not
 * depend on j) and B the other (not on i). Loop variables var[0..2] = i, j, k appear in
 * the store's affine forms with any constant coefficients; every other variable or
 * symbol is fixed for the kernel. The sum may be taken in any order (partial sums per k
 * block are added to dst). Renderers run it BLIS-style: blocks of nc columns and kc
 * steps of k, operand panels packed into contiguous scratch (zero-padded to whole
 * tiles), and an mr x nr tile of the result kept in registers, nr a multiple of the
 * vector width vw (elements). */
enum { KERN_MAX_M = 4 };

/* The n or k role as several loop variables (a convolution's weight gradient: n = the
 * filter offsets and input channels, k = the batch and spatial positions): value x is
 * (var[0], ..., var[n-1]) in mixed radix over ext, the last fastest. */
typedef struct KDim {
  int n;
  int var[KERN_MAX_M];
  long ext[KERN_MAX_M];
  /* The variables continue each other in every access that uses them (var[t]'s stride
   * is var[t+1]'s times ext[t+1], schedule.c merge_k): value x is then var[n-1] = x and
   * the others 0, no digits to compute. */
  bool linear;
} KDim;

typedef struct Kernel {
  Stmt *store;
  int a_arg;
  int var[3];     /* the m, n and k variables (m: the fastest of mvar) */
  long ext[3];    /* their extents (m: the product of mext) */
  /* The m role may be several loop variables (a convolution's batch and spatial axes):
   * row x is (mvar[0], ..., mvar[nm-1]) in mixed radix over mext, the last fastest. */
  int nm;
  int mvar[KERN_MAX_M];
  long mext[KERN_MAX_M];
  int mr, nr, vw;
  int kc, mc, nc;
  /* Split among threads: each block of B is packed once (split by panels), then the
   * product is split by whole mr row tiles, or with split_cols by nr-column panels
   * (fewer row tiles than panels: each thread then packs all of A's block, the smaller
   * operand). Every cell is still computed by one thread in the serial order. */
  bool parallel;
  bool split_cols;
  /* A contiguous along k, and one column tile (n <= nr: a packed A panel would be read
   * once) or a small A (in L1): the register tile reads A's rows in place (a row
   * outside the row guards reads a zero row instead). */
  bool direct_a;
  /* A `fill dst init` fused in (schedule.c): the kernel writes every cell of dst once per
   * k block, and the first k block stores init + its sum instead of adding (the same
   * bits as the fill, without its pass over dst and without reading dst back). */
  bool overwrite;
  double init;
  /* padding guards 0 <= aff < ext on m variables (and outer ones, never n or k): a row
   * where one fails is packed as zeros and not updated (a padded convolution) */
  int nrow_guards;
  Guard *row_guards;
  /* n and k as their variables (one each, unless the contraction needed several:
   * var[1] / var[2] are then the fastest, ext[1] / ext[2] the products) */
  KDim nd, kd;
  /* padding guards on k variables: A (a_guards) or B (b_guards) reads 0 where one fails
   * (its packed cell); the update is not affected (the target has no k variable) */
  int na_guards, nb_guards;
  Guard *a_guards, *b_guards;
  /* n of several variables, the fastest with stride 1 in B (b_runs) or in the target
   * (c_runs) and an extent that whole register tiles divide: a tile's columns are one
   * contiguous run there (one decode per tile row, not per cell) */
  bool b_runs, c_runs;
  /* Stmt*: a pointwise nest over the target's cells fused in (sched_epi.c): run for each
   * cell once it is final (after the last k block), with the m and n variables set */
  PtrVec epilogue;
} Kernel;


struct Stmt {
  StmtKind kind;
  /* S_LOOP: for var in [0, ext) body; a tiled loop (tile_var >= 0) runs var over
   * [tile*tile_var, min(tile*(tile_var+1), ext)) */
  int var;
  long ext;
  int dext;          /* S_LOOP: not 0: the extent is ext times this product (ir_prod) */
  int tile_var;
  int tile;
  /* S_LOOP: > 1 when the schedule made the loop a reduction into one cell (the body is
   * one `=add` store whose target does not depend on var), summed in this many
   * independent partial sums, then added to the cell (reassociates). */
  int accs;
  /* S_LOOP: the schedule found the iterations independent (each writes its own cells
   * and reads none another writes): they may run on several threads, in any split. */
  bool parallel;
  /* S_LOOP (schedule pass only): not 0: the body is one store overwriting its target
   * (OP_ARG2, no read of it) contiguously along var, and the loop's start, its trip count
   * and the target index at the start are multiples of `stream`: renderers may write
   * `stream` cells (16, 32 or 64 bytes: a vector of the target) at a time around the
   * caches (a non-temporal store, which skips reading each target line before writing
   * it). Buffers start 64-byte aligned
   * (ir_layout). An S_FENCE follows before anything else may read the target. */
  int stream;
  /* S_LOOP (schedule pass only): not 0: a block transpose of tblock x tblock cells. The
   * body is prefetches of row var (S_IF around S_PREFETCH; none or some) and, last, one
   * loop p whose body is one store overwriting (OP_ARG2) an f32 target contiguously
   * along p (coefficient 1) with a cell of another f32 buffer loaded, perhaps through
   * id, contiguously along this loop's var, perhaps with a constant added to it
   * (ir_tblock_load). Both loops' starts and trip counts are multiples of tblock, their
   * extents static. Renderers may move a block at once: tblock vector loads along var
   * (one per p), a register transpose, the constant added, tblock vector stores along
   * p (streamed when p is). */
  int tblock;
  /* S_LOOP / S_IF */
  PtrVec body;       /* Stmt* */
  /* S_IF: all guards hold */
  int nguards;
  Guard *guards;
  /* S_STORE: dst = accum(dst, val); OP_ARG2 overwrites.
   * S_PREFETCH (schedule pass only): a hint that the `ext` cells from dst on (flat index
   * only) will be written soon; it never faults and changes no result.
   * S_FENCE (schedule pass only): the streamed stores (S_LOOP.stream) of this thread
   * before it are ordered before its stores after it (x86 sfence: a thread that sees a
   * later store, such as the pool's completion count, sees them too). */
  Access dst;
  PrimOp accum;
  IrExpr *val;
  const char *what;  /* the assignment, for --check-bounds messages and comments */
  /* S_FILL: every cell of buf = value */
  int buf;
  double value;
  /* S_CALL: the functions callee, callee + 1, ..., callee + ncalls - 1 in turn (ncalls
   * >= 1). Lowering lays the tensors' functions out as one sequence in execution order
   * (every .fwd in creation order, then every .bwd in reverse creation order), so a
   * T.forward, T.backprop or routine is a few such runs over it, not a call per
   * function of its subgraph: the IR, the metadata and the runtime's lists stay linear
   * in the model. Make them with ir_add_call. */
  int callee;
  int ncalls;
  /* S_COMMENT */
  const char *text;
  /* S_KERNEL */
  Kernel *kern;
};

typedef struct IrFunc {
  int id;
  const char *name;  /* "step", "y.forward", "t#3.fwd" */
  bool exported;     /* listed in the model (callable by name) */
  bool seq;          /* exported, only calls, called by no function: the model lists its
                      * callees (metadata "seq") and the runtime calls them in turn
                      * through NAME_call, so no code re-lists them (ir_mark_seqs) */
  int nvars;         /* loop variables v0..v(nvars-1) */
  PtrVec body;       /* Stmt* */
  /* 1 + the index of the function holding the other half of this one's tensor code (a
   * tensor's .fwd and .bwd: far apart in the sequence, changed together by an edit of
   * the tensor; the split compile groups them together); 0: none. */
  int twin;
} IrFunc;

typedef struct IrAlias {
  const char *name;
  int buf;
} IrAlias;

typedef struct IrModule {
  PtrVec bufs;    /* IrBuf* */
  PtrVec syms;    /* IrSym* */
  PtrVec dims;    /* IrDim*: dynamic dimensions (graph.h DIM_DYN encoding), by id */
  PtrVec prods;   /* IrProd*: products of dims (Term.dyn, Stmt.dext, ...) */
  PtrVec checks;  /* IrCheck*: what the runtime verifies before each call */
  PtrVec funcs;   /* IrFunc* */
  PtrVec aliases; /* IrAlias* */
} IrModule;

/* src/ir_print.c */
void ir_print(FILE *out, const IrModule *m);
/* Function i as ir_print prints it. */
void ir_print_func(FILE *out, const IrModule *m, int i);
void aff_print(FILE *out, const Aff *a, const IrModule *m);
/* The affine form as a C expression of type long: loop variables iN, index symbols
 * SYM_PREFIX followed by the symbol number (used by the C and CUDA emitters). */
void aff_print_c(FILE *out, const char *sym_prefix, const Aff *f);
/* The instance layout (the model ABI, HACKING.md): every open model gets its own storage
 * block, 64-byte aligned, of `size` bytes: a header of IR_INST_HEADER bytes (tdsl_abi.h:
 * the runtime's slots and the --check-bounds fault), then each buffer at a multiple of
 * 64 (distinct fields of one struct, so gcc knows they never alias), then the index
 * symbols (int). */
#define IR_INST_HEADER INST_HEADER
typedef struct IrLayout {
  long *buf_off, *sym_off; /* byte offsets in the instance */
  long *dim_off;           /* each dynamic dimension's current value (int, 0: unset) */
  long size;               /* a multiple of 64 */
} IrLayout;
IrLayout ir_layout(Arena *a, const IrModule *m);
/* Bytes of buffer b's storage in the instance (one cell at least; a dynamic buffer is
 * a pointer to storage the runtime allocates). */
long ir_buf_bytes(const IrBuf *b);
/* Dynamic dimensions: the product interned for the n dim ids (0 when n is 0), the
 * product of two products, and a product by number (NULL for 0). */
int ir_prod(Arena *a, IrModule *m, const int *dims, int n);
int ir_prod_mul(Arena *a, IrModule *m, int p, int q);
const IrProd *ir_prod_at(const IrModule *m, int p);
/* Do the statements use a dynamic size anywhere (loops, guards, strides, a dynamic
 * buffer)? The schedule leaves such statements as they are. */
bool ir_stmts_dynamic(const IrModule *m, const PtrVec *body);
bool ir_stmt_dynamic(const IrModule *m, const Stmt *s);
/* The product's text: "n*m" (an anonymous dim is ?ID, a flag "(n>1)"), and one dim's. */
void ir_prod_print(FILE *out, const IrModule *m, int p);
void ir_dim_print(FILE *out, const IrModule *m, int id);
const char *ir_dim_name(Arena *a, const IrModule *m, int id);
/* Appends a call of function callee to body, extending the run of the call before it
 * when callee follows that run's last function. */
void ir_add_call(Arena *a, PtrVec *body, int callee);
/* Sets IrFunc.seq (end of lowering). */
void ir_mark_seqs(Arena *a, IrModule *m);
/* The model metadata string the runtime reads (runtime/tdslrt.c parses it); name is the
 * prefix of the model's exported symbols. */
char *ir_metadata(Arena *a, const IrModule *m, const char *name);

/* Lowering (src/lower.c): every tensor gets a value buffer, differentiable ones a
 * gradient buffer; per tensor a "NAME.fwd"/"NAME.bwd" function for its own code;
 * exported "NAME.forward"/"NAME.backprop" per named tensor and one function per
 * exported routine. Returns NULL after reporting errors. */
struct Graph;
struct Diag;
IrModule *lower_graph(Arena *a, struct Diag *d, struct Graph *g, bool double_prec);
int ir_find_func(const IrModule *m, const char *name); /* -1 if none */

/* Affine helpers (src/lower.c). */
void aff_range(const Aff *a, const long *var_ext, long *lo, long *hi); /* ignores symbols */
/* src/schedule.c: the coefficient of loop variable var in f (0 if absent), and f without
 * the terms of the n variables vars. */
long aff_coef(const Aff *f, int var);
/* The load a block transpose's store st moves (Stmt.tblock) and in *addend the constant
 * its value adds to it (NULL: none); NULL when st's value or accumulation is no such. */
const IrExpr *ir_tblock_load(const Stmt *st, const IrExpr **addend);
Aff aff_drop(Arena *a, const Aff *f, const int *vars, int n);

#endif
