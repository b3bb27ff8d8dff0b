/* infer.h: shape inference internals (doc/inference.md), shared by
 *   src/infer_row.c    dims, rows, constraints, the solver and its closing stages
 *   src/infer_logic.c  constraints per UpdateStep (LogicKind), Tensor.shape, errors
 *   src/infer_proj.c   projections per UpdateStep
 *   src/infer_dump.c   --dump-shapes / --dump-projections
 *
 * Representation. A dimension is a DimNode in a union-find forest: a root either
 * knows its size d (`known`: >= 0, or DIM_DYN; 0 is an empty axis, an ordinary size
 * that never broadcasts; with an optional label) or is an unknown variable. A row is
 * `beg ++ var ++ end`: leftmost axes, an optional row variable, rightmost axes (a row
 * without a variable is closed: all its axes are in `end`). Solving a row variable
 * points it at a Row; rows are read through row_norm, which substitutes solved
 * variables.
 *
 * Constraints are kept in one list and simplified until nothing changes (a fixpoint);
 * a simplification either discharges a constraint, replaces it by simpler ones, solves
 * a variable, or leaves it pending. A pending constraint watches the dims and row
 * variables its outcome depends on and is queued again only when one of them changes,
 * so stage 1 costs time in proportion to what changes, not to the constraints
 * pending (linear in the model). Every rule is a sound
 * deduction, so the fixpoint does not depend on the order of the constraints; the
 * closing stages 2-7 then make the defaulting decisions, one stage at a time, each
 * computed from a snapshot and followed by a new fixpoint; the rounds of stages 3a and 6
 * compute their snapshot's decisions from what the previous round changed (infer_row.c,
 * "closing rounds"). */
#ifndef TDSL_INFER_H
#define TDSL_INFER_H

/* The most axes a row may have: a longer one means a diverging system (infer_row.c), and
 * a declaration that long is refused where it stands (infer_logic.c tensor_rows). */
enum { MAX_RANK = 64 };

#include <limits.h>

#include "ctx.h"

typedef struct DimNode DimNode;
typedef struct RowVar RowVar;
typedef struct Row Row;

/* Where a dimension or a constraint came from, for diagnostics. */
typedef struct Origin {
  const char *what; /* "output axis 1 of w", "einsum axis j", ... (NULL: unknown) */
  Loc loc;          /* declaration or operation location */
  bool has_loc;
} Origin;

struct DimNode {
  int id;
  DimNode *parent;  /* union-find link; NULL at a root */
  int d;            /* root only, when known: the size (>= 0, or DIM_DYN) */
  bool known;       /* root only: d is the size (a size of 0 is an empty axis, so 0 cannot
                       stand for "unknown") */
  const char *label;
  bool terminal;    /* an axis of a terminal tensor: closes to its LUB (stage 3) */
  Tensor *owner;    /* the terminal tensor (parameters must not default to 1) */
  bool meets_one;   /* root only: was compared with a dimension-1 axis it broadcasts
                       over, so closing a bound below it to 1 is not arbitrary */
  Origin origin;    /* who fixed the size (roots with d > 0) or created the variable */
  const Origin *result_only; /* an einsum result axis no argument has: closing it to the
                                default 1 is an error (tdsl(7), SHAPES AND INFERENCE) */
  const Origin *lonely;      /* an einsum axis of one argument only: named when a
                                parameter dimension below it stays undetermined */
  long long at_least; /* root only: the largest fixed-index bound on a variable: above 1
                         it can never broadcast, so it equals whatever is above it */
  long long arg_fixed; /* this node itself (not its root): an argument's spec axis at fixed
                          index arg_fixed-1; as OCANNL, the index reads the argument's own
                          axis, so above 0 the axis below cannot broadcast into it */
  PtrVec watch;     /* root only: pending constraints to simplify again when it changes */
};

struct Row {
  int nbeg, nend;
  DimNode **beg, **end;
  RowVar *var; /* NULL: closed row, nbeg == 0 */
};

struct RowVar {
  int id;
  Row *solved;
  bool terminal;
  Tensor *owner;
  int kind;    /* KIND_* of the row it stands for */
  int axes_before; /* axes its row gained before it (a variable solved by a row with a
                      fresh variable): beyond MAX_RANK the system diverges, even where
                      each constraint consumed what it paired and sees short rows */
  PtrVec watch; /* pending constraints to simplify again when it is solved */
  int stamp;    /* the closing rounds' scan that last visited it (Solver.stamp) */
  int lub;      /* stage 3a: the strict least upper bound's length (row_lub_len), kept
                   between rounds and recomputed where it may have changed */
};

typedef enum ConKind {
  C_DIM_EQ,   /* d1 = d2 */
  C_DIM_INEQ, /* d1 (cur) >= d2 (subr): d2 = d1 or d2 = 1 */
  C_ROW_EQ,   /* r1 = r2 */
  C_ROW_INEQ, /* r1 (cur) >= r2 (subr): at least as many axes, axis-wise >= */
  C_AT_LEAST, /* d1 >= k as a size (a fixed index k-1 reads it) */
  C_TOTAL,    /* product of rows[0..2] = k (Total_elems) */
  C_CONV,     /* d1 (input) relates to d2 (output) and d3 (kernel) */
} ConKind;

typedef struct Constraint {
  ConKind kind;
  bool done;
  DimNode *d1, *d2, *d3;
  Row *r1, *r2;
  Row *rows[3];
  RowVar *total_var; /* C_TOTAL: the row variable that takes the remaining elements */
  long long k;       /* C_AT_LEAST bound, C_TOTAL elements, C_CONV constant offset */
  int stride, dilation;
  bool padded;
  bool scale;        /* C_CONV made by set_scale (d1 = stride * d2, no convolution): its messages */
  /* Provenance: the operation and what each side describes. */
  UpdateStep *step;
  const char *what1, *what2;
  int from_end;      /* C_DIM_*: axis offset within the rows (>= 0 from the left, < 0 from the right) */
  int slot1, slot2;  /* rows of step's slot tensors (0 lhs, k rhs k), -1 spec/other: the
                        same tensor in two slots must not share projections */
  bool queued;       /* on the solver's work queue */
  bool seed;         /* C_ROW_INEQ: gives its larger side's variable axes (may_gain_axes) */
  int seq;           /* creation number: the closing rounds take decisions in this order */
  int stamp;         /* the closing rounds' scan that last visited it (Solver.stamp) */
} Constraint;

/* A pairing of two axes by one operation: the material of projection equations. */
typedef struct Pairing {
  DimNode *cur, *subr;
  int cur_slot, subr_slot; /* -1: a spec axis of the step */
  bool eq;
} Pairing;

/* Per UpdateStep bookkeeping for projections. */
typedef struct StepInfo {
  UpdateStep *step;
  Row *slot_row[4][3]; /* the tensors' rows, by slot and kind */
  PtrVec pairs;        /* Pairing* derived from this step's row constraints */
  PtrVec fixed;        /* DimNode* spec axes with a fixed index (fixed_val parallel) */
  PtrVec fixed_val;    /* (intptr_t) index */
  PtrVec affine;       /* Constraint* C_CONV of this step's spec */
  DimNode *slice;      /* BATCH_SLICE: the removed axis, indexed by step->sym */
  PtrVec names, dims;  /* einsum: the spec's axis labels (const char*) and their DimNode*, */
  PtrVec rnames, rvars; /* its row variables and RowVar*: what `dim` of a capture reads */
} StepInfo;

typedef struct Solver {
  Arena *a;
  Diag *diag;
  PtrVec cons;   /* Constraint* */
  PtrVec queue;  /* Constraint* to simplify (from qhead): new, progressed or woken */
  int qhead, ndone;
  bool online;   /* stage 1 between two steps: defer the sweep over all bounds */
  PtrVec dims;   /* DimNode* (all created) */
  PtrVec rvars;  /* RowVar* */
  StepInfo *cur_info; /* pairings are recorded here while deriving */
  StepInfo **infos;   /* by step id (NULL for unit tests that use the solver alone) */
  int ninfos;
  bool failed;
  long long work; /* simplification count: a guard against divergence */
  long long made; /* constraints created so far (the guard's limit grows with them) */
  /* The closing stages' cost (test_infer_scale): sweeps over every constraint, row
   * variable or dimension, and the entries all their scans examined. */
  long long sweeps, visits;
  /* Bumped whenever what force_conflicting_bounds reads changes: a dim root (a link, a
   * size, a label) or the set of pending dimension inequalities. A sweep that found
   * nothing at epoch e finds nothing again while it is e (fcb_epoch + 1: that e). */
  long long dim_epoch, fcb_epoch;
  /* The closing rounds of stages 3a and 6 (infer_row.c, "closing rounds"): while
   * `logging`, the row inequalities simplified and the variables they had before. */
  bool logging;
  PtrVec log_cons, log_vars;
  int stamp;      /* the current scan's number (Constraint.stamp, RowVar.stamp) */
  int nseeds;     /* pending row inequalities with `seed` set */
  Graph *g;       /* names of dynamic dimensions in messages, and where joins of them go
                     (NULL in unit tests: `?ID`, and no joins) */
  PtrVec dyn_lower; /* C_DIM_INEQ pending on an unknown cur above a dynamic subr: solved
                       at the fixpoint (dyn_lower_bounds, doc/inference.md) */
  PtrVec checks;  /* DimCheck*: run-time checks the rules recorded (unique) */
  PtrVec numbers; /* Constraint*: "lhs >= [1]" of assignments reading a number, made
                     pending only where stage 1 left the row open (solver_close) */
  /* the bounds index (infer_row.c): pending "subr <= cur" edges by subr root id */
  int *up_head, *up_next, *up_mark, *up_memo, up_n, up_cap, up_stamp, up_nodes;
  DimNode **up_to;
  const char **up_lbl; /* the label of a memoized bound */
} Solver;

void solver_init(Solver *s, Arena *a, Diag *diag);

/* Dimensions. */
DimNode *dim_find(DimNode *d);
DimNode *dim_var(Solver *s);
DimNode *dim_known(Solver *s, int d, const char *label);
int dim_size(DimNode *d); /* a known dim's size (DIM_DYN for a dynamic one); 0 if unknown */
bool dim_is_known(DimNode *d);
enum { SIZE_UNKNOWN = INT_MIN }; /* a projection class's size before any member's is known
                                    (0 is a size: an empty axis) */
/* A dimension for messages: N, a dynamic dimension's name, `?` (arena string). */
const char *dim_str(Solver *s, int d);

/* Rows. */
Row *row_closed(Solver *s, int n, DimNode **dims);
Row *row_open(Solver *s, int nbeg, DimNode **beg, RowVar *v, int nend, DimNode **end);
RowVar *row_var(Solver *s, int kind);
Row *row_of_var(Solver *s, RowVar *v);
Row *row_norm(Solver *s, Row *r); /* substitutes solved variables */
int row_len(const Row *r);        /* axes known so far (beg + end) */

/* Constraints (added to the pending list; solve with solver_run). */
Constraint *con_add(Solver *s, ConKind k, UpdateStep *step);
void con_dim_eq(Solver *s, DimNode *a, DimNode *b, UpdateStep *st, const char *w1, const char *w2);
void con_dim_ineq(Solver *s, DimNode *cur, DimNode *subr, UpdateStep *st, const char *w1, const char *w2);
Constraint *con_row_eq(Solver *s, Row *a, Row *b, UpdateStep *st, const char *w1, const char *w2);
Constraint *con_row_ineq(Solver *s, Row *cur, Row *subr, UpdateStep *st, const char *w1, const char *w2);
void con_at_least(Solver *s, DimNode *d, long long k, UpdateStep *st, const char *w);
Constraint *con_conv(Solver *s, DimNode *in, DimNode *out, DimNode *kernel, int stride, int dilation,
                     bool padded, UpdateStep *st, const char *w);
void con_total(Solver *s, Row *rows[3], RowVar *carrier, long long n, UpdateStep *st, const char *w);

/* Solving. solver_run reaches the fixpoint of the pending constraints (stage 1);
 * solver_close runs the closing stages 2..7. Both return false after an error. */
bool solver_run(Solver *s);
bool solver_close(Solver *s);
void solver_free(Solver *s); /* the malloc'ed scratch (arena data stays) */
/* Fails with a located error (also used by the logic for out-of-solver checks). */
void solver_fail(Solver *s, const Constraint *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Derives the constraints of every UpdateStep of g (infer_logic.c) and solves them,
 * stages 1-7; fills s->infos. Used by infer_shapes and, again from scratch (fresh
 * projection identities, doc/inference.md "Projections"), by infer_projections. */
bool infer_solve(Solver *s, Graph *g);

/* Projection classes (infer_proj.c): a union-find over the axes a step pairs. ORDER:
 * priority; a class is indexed by the strongest kind among its members (an iterator
 * unless something fixes it). */
typedef enum ClassKind {
  CL_ITER,   /* a loop iterator */
  CL_FIXED,  /* a fixed index (spec digit, or a broadcast dimension-1 axis: 0) */
  CL_AFFINE, /* a convolution input: stride * output + dilation * kernel + offset */
  CL_SYM,    /* the sliced batch axis: the step's index symbol */
} ClassKind;

typedef struct ProjNode {
  DimNode *dim;
  int parent;
  int ns;          /* the namespace the node was made in (pc_node), for pc_reset */
  /* at a class root: */
  ClassKind kind;
  int fixed;       /* CL_FIXED */
  Constraint *aff; /* CL_AFFINE: its C_CONV */
  int iter;        /* CL_ITER: iterator number once numbered, else -1 */
  int size;        /* the largest member dimension (infer_proj.c size_join), or SIZE_UNKNOWN */
  bool dyn_bcast;  /* this axis (not its class): a dynamic size broadcast into the class */
} ProjNode;

typedef struct ProjCtx {
  Solver *s;
  int *local;     /* (namespace + 1, DimNode id) -> node index + 1 (0: none) */
  int ndims;
  ProjNode *node;
  int n, cap;
  int ns[4];      /* per slot of the current step: its namespace (-1: the shared one) */
} ProjCtx;

void pc_init(ProjCtx *p, Solver *s); /* after solving: sized by s->dims */
void pc_free(ProjCtx *p);
int pc_node(ProjCtx *p, int slot, DimNode *d); /* slot -1: a spec axis */
int pc_find(ProjCtx *p, int i);
void pc_union(ProjCtx *p, int a, int b);
/* Marks i's class as kind k unless it already has that kind or a stronger one. */
void pc_mark(ProjCtx *p, int i, ClassKind k, int fixed, Constraint *aff);

#endif
