/* graph.h: the tensor graph, the output of staging (src/eval*.c) and the input of
 * shape/projection inference (src/infer*.c) and lowering (src/lower.c).
 *
 * A program evaluates to tensors. Each non-terminal tensor has one UpdateStep: its
 * shape logic (doc/inference.md) relating it (lhs) to its arguments (rhs). Code
 * is a list of assignments (OCANNL's Accum_binop/Accum_unop); each
 * assignment takes its projections from an UpdateStep through a slot mapping, so
 * backprop assignments reuse the forward operation's projections with slots permuted.
 * A %cd assignment with its own ~logic (or the default pointwise one) gets a fresh
 * UpdateStep of its own, which also adds shape constraints. */
#ifndef TDSL_GRAPH_H
#define TDSL_GRAPH_H

#include <stdio.h>

#include "base.h"
#include "ops.h"
#include "spec.h"
#include "tdsl_abi.h" /* KIND_* (axis kinds, memory order), InitKind */

typedef struct Tensor Tensor;
typedef struct UpdateStep UpdateStep;
typedef struct Projections Projections;

/* A static index symbol: `let n = index 3` (range 3) or `index ()` (range 0 = unbounded).
 * range is DIM_DYN(id) when an `@|` over a dynamic axis gave it its range. */
typedef struct IndexSym {
  int id;
  const char *name;
  int range;
  Loc loc;
  bool range_inferred; /* `index ()` that took its range from the axis an `@|` slices */
  Loc range_loc;       /* that slice */
} IndexSym;

/* A dynamic dimension: a size known only at run time. `let n = dim ()`
 * names one; each `?` in a shape is an anonymous one (name NULL). */
typedef struct DimSym {
  int id;
  const char *name; /* NULL for `?`; "max(n,m)" for a join */
  Loc loc;
  /* A join (made by shape inference where two different dynamic sizes broadcast into
   * one result, the seed's `? vs ?`): the size is the largest of dims join[0..njoin)
   * (ids of dims that are no joins, sorted), each of which the run-time checks make 1
   * or that size. Nobody sets it: the runtime computes it. njoin 0: a dimension. */
  int njoin;
  int *join;
} DimSym;

/* A run-time check of dynamic dimensions, recorded by shape inference where
 * the compile-time rules cannot decide (doc/inference.md, "Dynamic dimensions"). The
 * call must fail unless  size == expect, or  size == 1 when or_one (size broadcasts).
 * size and expect are dimensions as ints (DIM_DYN or static), at least one dynamic; msg
 * names the operation's tensors and axes; loc is the operation. Checks are kept unique
 * by (size, expect, or_one). Graph.dimchecks lists them; --dump-shapes prints them. */
typedef struct DimCheck {
  int size, expect;
  bool or_one;
  const char *msg;
  Loc loc;
} DimCheck;

/* Stored as DIM_DYN(id) wherever a dimension is an int (tdsl_abi.h). */
/* One declared or solved dimension (DIM_DYN for a dynamic one). label may be NULL. */
typedef struct DimDecl {
  int d;         /* >= 0 (0: an empty axis), or DIM_DYN */
  const char *label;
  bool unknown;  /* Shape only, after an inference error: not inferred (d is 0 then) */
} DimDecl;

/* A declared row (record fields o/i/b, range_of_shape arguments, literal brackets). */
typedef struct RowDecl {
  bool given; /* false: unknown, inference decides */
  int n;
  DimDecl *dims;
  Loc loc;    /* where it was declared (for notes in shape errors) */
} RowDecl;

/* A fully inferred shape: three rows of dims, filled by shape inference. */
typedef struct Shape {
  bool solved;     /* filled; after an inference error, partly: an unknown dim is `unknown` */
  int n[3];        /* indexed by KIND_* */
  bool open[3];    /* after an inference error: the row may have further axes, not
                      inferred yet (an unsolved row variable) */
  DimDecl *dims[3];
} Shape;

typedef struct Init {
  InitKind kind;
  double value;     /* INIT_CONST */
  double *values;   /* INIT_VALUES */
  int nvalues;
  const char *path; /* INIT_FILE, resolved relative to the source file */
  long long file_elems; /* INIT_FILE: number of float32 values (file size / 4) */
  const InitOp *ops; /* INIT_EXPR */
  int nops;
} Init;

typedef enum TensorKind {
  TK_PARAM,  /* %op inline declaration: differentiable, initialized by init */
  TK_TERM,   /* %cd inline declaration: non-differentiable; host input or scratch */
  TK_CONST,  /* constant terminal: number, literal, range, range_of_shape, file */
  TK_OP,     /* computed by its forward code */
} TensorKind;

typedef enum Prec { PREC_DEFAULT, PREC_SINGLE, PREC_DOUBLE } Prec;

/* A list of assignments, executed in order. */
typedef struct Code {
  PtrVec asgns; /* Asgn* */
} Code;

struct Tensor {
  int id;           /* creation order, from 0 */
  const char *name; /* binding / declaration name, qualified on collision; NULL if anonymous */
  TensorKind kind;
  bool diff;        /* has a gradient node (t.grad) */
  Prec prec;
  Loc loc;          /* the operation or declaration that created it */
  Init init;
  RowDecl decl[3];  /* declared rows, by KIND_* */
  UpdateStep *step; /* its shape logic; for terminals a LOGIC_TERMINAL step */
  Code fwd;         /* its own forward assignments (not its arguments') */
  Code bwd;         /* its own backprop: propagates t.grad into its arguments' grads */
  Shape shape;      /* filled by shape inference */
  bool dim_embed;   /* INIT_CONST whose value shape inference sets (DimEmbed): staging
                       must not read init.value (no folding into code or init programs) */
  const char *op_name; /* diagnostics: the operation that computes an unnamed tensor ("add") */
  const char *in_fn;   /* diagnostics: the library function the user applied that made it
                          (loc is that application: "the result of '-' in 'mse'") */
  const char *nodiff; /* diagnostics: why a computed tensor with a differentiable argument
                         has no gradient ("computed in %cd code", ...); NULL otherwise */
};

typedef enum LogicKind {
  LOGIC_TERMINAL,       /* lhs only; shape information comes from lhs->init and lhs->decl */
  LOGIC_POINTWISE_UN,   /* lhs >= rhs1; with nrhs == 0 (a fill such as `g =: 0`, `t =: !@s`,
                           zero_grads) it constrains nothing and iterates over lhs */
  LOGIC_POINTWISE_BIN,  /* lhs >= rhs1, lhs >= rhs2: NumPy-style broadcast per row */
  LOGIC_POINTWISE_TERN, /* where */
  LOGIC_COMPOSE,        /* rhs1 * rhs2: outputs of rhs2 meet inputs of rhs1 */
  LOGIC_COMPOSE_TERN,   /* fma: compose of rhs1, rhs2, pointwise with rhs3 */
  LOGIC_TRANSPOSE,      /* swaps input and output rows of rhs1 */
  LOGIC_PERMUTE,        /* unary einsum: spec->nargs == 1 */
  LOGIC_EINSUM,         /* binary einsum: spec->nargs == 2 */
  LOGIC_BATCH_SLICE,    /* @|: lhs is rhs1 without its leftmost batch axis, indexed by sym */
} LogicKind;

struct UpdateStep {
  int id;            /* creation order: inference stage 1 visits steps in this order */
  LogicKind kind;
  Tensor *lhs;
  int nrhs;
  Tensor *rhs[3];
  const Spec *spec;  /* PERMUTE/EINSUM; stride/dilation identifiers already resolved */
  bool use_padding;  /* for CONV_SCOPE axes of spec */
  bool scalar_arg;   /* pointwise %cd: reads an inlined number, of shape [1] (scalar_operand) */
  IndexSym *sym;     /* BATCH_SLICE */
  Loc loc;           /* the operation's source location: shape errors point here */
  Loc spec_loc;      /* location of the spec string's opening quote, if any */
  Projections *proj; /* filled by projection inference */
  Loc via;           /* diagnostics: the application of the user's function whose body
                        made this step (loc is in the body, shared by every application) */
  const char *via_fn; /* that function's name */
  int stack_elem;    /* diagnostics: 1 + the element of a stack `[ a; b ]` this EINSUM step
                        places (its spec is internal, not the user's); 0 otherwise */
};

/* A tensor node operand: a tensor's value or gradient. */
typedef struct Buf {
  Tensor *t;
  bool grad;
} Buf;

/* The right-hand side of an assignment: a small expression tree of primitive ops
 * evaluated at every point of the iteration space (OCANNL's Accum_binop/Accum_unop,
 * generalized so that e.g. a max-pool gradient `where (eq (v1, v), g, 0.)` needs no
 * intermediate tensor). Leaves are tensor operands (indexed through a slot of the
 * assignment's UpdateStep), compile-time constants, or index symbol values. */
typedef enum AExprKind { AE_BUF, AE_CONST, AE_SYM, AE_OP } AExprKind;
typedef struct AExpr AExpr;
struct AExpr {
  AExprKind kind;
  Buf buf;        /* AE_BUF */
  int slot;       /* AE_BUF: 0 = step->lhs, k = step->rhs[k-1]; -1 = a tensor all of whose
                     axes have dimension 1, read at index 0 (a scalar broadcast) */
  double value;   /* AE_CONST */
  IndexSym *sym;  /* AE_SYM */
  PrimOp op;      /* AE_OP */
  AExpr *args[3]; /* AE_OP: op_info[op].arity children */
};

typedef enum AsgnKind { ASGN_OP, ASGN_COMMENT } AsgnKind;

/* lhs ACCUM= rhs, e.g. `v =:+ v1 * v2` is accum OP_ADD, rhs (OP_MUL v1 v2),
 * init_neutral true. `=:` alone is accum OP_ARG2 (overwrite). */
typedef struct Asgn {
  AsgnKind kind;
  const char *comment; /* ASGN_COMMENT */
  Buf lhs;
  int lhs_slot;        /* 0 = step->lhs, k = step->rhs[k-1] */
  bool init_neutral;   /* ':' : first fill lhs with the accumulator's neutral element */
  PrimOp accum;
  AExpr *rhs;
  UpdateStep *step;    /* where the projections come from */
  Loc loc;
} Asgn;

typedef struct Routine {
  const char *name;
  Code code;
  Loc loc;
} Routine;

typedef struct NamedTensor {
  const char *name; /* the name as the user writes it (an alias may differ from t->name) */
  Tensor *t;
} NamedTensor;

/* A top-level name whose newest binding is not a tensor of the model (staging records
 * them, src/eval.c): the driver says what a name given on the command line (--print,
 * --call, --load, --set) is when the compiled model has no such tensor or routine. */
typedef enum TopNameKind {
  TOPNAME_VALUE,    /* a compile-time value: number, string, list, ... (what says which) */
  TOPNAME_INDEX,    /* an index symbol */
  TOPNAME_DIM,      /* a dynamic dimension */
  TOPNAME_ROUTINE,  /* an exported routine (a let%cd of code without parameters) */
  TOPNAME_CODE,     /* code not exported: bound by let or let%op */
  TOPNAME_FUNCTION, /* a function or an operation */
  TOPNAME_GRAD,     /* the gradient of tensor t */
} TopNameKind;

typedef struct TopName {
  const char *name;
  TopNameKind kind;
  const char *what; /* "a compile-time number", "a function", "the gradient T.grad", ... */
  Loc loc;          /* the bound name; no file for a built-in */
  Tensor *t;        /* TOPNAME_GRAD */
} TopName;

/* A label captured by an einsum (the seed's capture list: `x +* "ij;jk=>ik" ["j"] y`):
 * the axis label or (row) row variable `name` of step's spec. Like an inline declaration
 * it is bound from the start of its scope (OCANNL hoists it), so a use may come before
 * the einsum runs: step is NULL until it does. loc: the capture list's string. */
typedef struct CaptureRef {
  UpdateStep *step;
  const char *name;
  bool row;
  Loc loc;
} CaptureRef;

/* `dim j` of a captured label: the constant scalar t gets, after shape inference, the
 * size inference gave the label (for a row variable, the product of its axes' sizes).
 * loc is the `dim` application. */
typedef struct DimEmbed {
  Tensor *t;
  CaptureRef *ref;
  Loc loc;
} DimEmbed;

/* `set_dim j 3` / `set_equal j k` / `set_scale ~factor:2 j k` (OCANNL's Shape.set_dim,
 * set_equal, set_scale on captured labels): the label ref has size value, or (ref2 != NULL)
 * factor times the size of label ref2 (factor 1: set_equal). Shape inference adds it once both steps' constraints exist; loc (the
 * application) is where a conflict is reported. */
typedef struct DimSet {
  CaptureRef *ref, *ref2;
  int value;
  int factor;
  Loc loc;
} DimSet;

typedef struct Graph {
  PtrVec tensors;  /* Tensor*, creation order */
  PtrVec steps;    /* UpdateStep*, creation order */
  PtrVec names;    /* NamedTensor*, definition order; --dump-shapes lists these */
  PtrVec routines; /* Routine*: exported routines (init is implicit) */
  PtrVec syms;     /* IndexSym* */
  PtrVec dimsyms;  /* DimSym*: dynamic dimensions, by id */
  PtrVec dimchecks; /* DimCheck*: run-time checks of dynamic dimensions (shape inference) */
  PtrVec topnames; /* TopName*: top-level names not bound to a tensor, newest binding only */
  PtrVec dimembeds; /* DimEmbed*: `dim` of captured labels, filled by shape inference */
  PtrVec dimsets;   /* DimSet*: sizes set on captured labels, creation order */
} Graph;

/* Axis index of one operand axis in an assignment's iteration space:
 *   index = offset + sum_k coef[k] * iter[k]  (+ the value of sym, if sym != NULL)
 * A fixed index has nterms == 0. Affine (convolution) indices may fall outside the
 * operand's extent; such iterations are skipped (padding). */
enum { MAX_AFFINE_TERMS = 4 };
typedef struct AxisIndex {
  int nterms;
  int coef[MAX_AFFINE_TERMS];
  int iter[MAX_AFFINE_TERMS];
  int offset;
  IndexSym *sym;
  bool dyn_bcast; /* the operand axis has a dynamic size that broadcasts into the iterator
                     (it may be 1 at run time while the iterator is larger): the index is 0
                     whenever the axis's run-time size is 1 */
} AxisIndex;

/* The projections of an UpdateStep (doc/inference.md, "Projections"). */
struct Projections {
  int niters;
  int *iter_size;    /* the product space: size of each iterator */
  int nslots;        /* 1 + step->nrhs */
  int rank[4];       /* per slot: number of axes (batch + output + input) */
  AxisIndex *idx[4]; /* per slot, per axis in memory order (batch, output, input) */
};

/* Constructors (src/graph_build.c): every graph node is made by one of these, from the
 * arena the graph lives in. A terminal tensor (kind != TK_OP) gets its LOGIC_TERMINAL
 * step at once; a computed one gets its step from the operation that makes it. */
Tensor *graph_tensor(Arena *a, Graph *g, TensorKind kind, Loc loc);
UpdateStep *graph_step(Arena *a, Graph *g, LogicKind kind, Tensor *lhs, int nrhs, Tensor **rhs, Loc loc);
/* Adds name (an alias when t already has one) to g's name table. */
void graph_name(Arena *a, Graph *g, const char *name, Tensor *t);
AExpr *ae_buf(Arena *a, Tensor *t, bool grad, int slot);
AExpr *ae_const(Arena *a, double x);
AExpr *ae_op(Arena *a, PrimOp op, AExpr *x, AExpr *y, AExpr *z);
Asgn *asgn_new(Arena *a, Tensor *lhs, bool grad, int lhs_slot, PrimOp accum, bool init, AExpr *rhs,
               UpdateStep *step, Loc loc);

/* The forward code of t's subgraph, in creation order (parameters, terms and constants
 * have none): what `t.forward` denotes and `--call T.forward` runs (src/graph_code.c). */
void graph_forward_code(Arena *a, const Graph *g, const Tensor *t, Code *out);
/* The backprop code of t's subgraph: the bwd code of its differentiable computed
 * tensors in reverse creation order (`t.backprop`; empty if t is not differentiable). */
void graph_backprop_code(Arena *a, const Graph *g, const Tensor *t, Code *out);

/* The role (TensorRole, runtime/tdsl_abi.h) of each tensor's value, by tensor id
 * (src/graph_role.c). */
char *graph_roles(Arena *a, const Graph *g);

/* Prints the graph in the stable text form of --dump-graph (src/graph_print.c). */
void graph_print(FILE *out, const Graph *g);
/* Prints a dimension: N, or a dynamic one by name, `?` when anonymous (`?ID` with ids). */
void graph_print_dim(FILE *out, const Graph *g, int d, bool ids);
/* For messages: the operator a prelude operation is written with ("add" -> "+",
 * "matmul" -> "*"), else op itself. */
const char *graph_op_token(const char *op);

/* The tensors reachable from t through step arguments and what its forward code reads
 * (src/graph_code.c): a mark per tensor id. mode 0 = everything; 1 = stop at tensors
 * older than new_from unless they are non-differentiable computed tensors; 2 = stop at
 * every tensor older than new_from (staging uses 1 and 2 for inline-scope questions). */
char *graph_subgraph(Arena *a, const Graph *g, const Tensor *t, int mode, int new_from);
/* graph_subgraph with reusable memory: w->seen marks what the last walk reached. With
 * memo, the walker keeps each tensor's inputs for the next walks: only for a graph that
 * no longer changes (lowering walks from every named tensor). */
typedef struct GraphWalk {
  bool memo;
  char *seen;
  int cap;
  PtrVec stack, in;
  PtrVec marked;   /* the tensors seen[] marks, in the order met (the next walk clears them) */
  PtrVec **inputs; /* with memo: per tensor id, its inputs once met */
} GraphWalk;
void graph_walk(Arena *a, const Graph *g, const Tensor *t, int mode, int new_from, GraphWalk *w);

#endif
