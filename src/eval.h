/* eval.h: internals of staging (compile-time evaluation of a Program into a Graph).
 * Split over:
 *   eval.c         values, environments, application, items, open
 *   eval_tensor.c  tensor construction: constants, literals, inline declarations,
 *                  stacking, builtins (range, range_of_shape, uniform, file, index)
 *   eval_math.c    compile-time math on numbers (sqrt, ..., min, max)
 *   eval_init.c    initializer expressions -> per-cell init programs; normal, kaiming
 *   eval_op.c      `op` definitions: instantiating forward/backward code on a tensor
 *   eval_code.c    %cd assignments and accessors (.forward, .backprop, ...)
 *   graph_code.c   subgraphs, t.forward / t.backprop code (also public in graph.h)
 * Everything lives in the context's arena; the evaluator's state is one St.
 *
 * Decisions where the contract leaves room (tdsl(7)):
 * - Scoping: `{ w }` is created once per DeclScope, keyed by the record expression.
 *   A top-level binding opens a scope (its declarations also become top-level names
 *   for later items); binding a function's unit parameter `()` opens a fresh one kept
 *   in the partial application, so `let l1 = layer ~label:["L1"] ()` shares one set
 *   between all uses of l1. Declared names are visible in their scope before local
 *   lookups fail (OCANNL hoists them), after local let/fun bindings.
 * - Names: a declaration is named by its identifier; in a unit scope with a label
 *   (the ~label argument, else the name of the first named tensor argument after (),
 *   e.g. sgd_one () p gives "w1.sgd_delta") always "LABEL.ident"; any remaining
 *   collision gets "_2", "_3"... A binding names its unnamed result tensor; a binding
 *   of an already named tensor adds an alias entry to Graph.names.
 * - A number, `!.x`, `!..n` used as a tensor is a TK_CONST with rows b=[] i=[] o=[1].
 *   `[ a; b ]` containing tensors stacks them: element k is multiplied in by its own
 *   EINSUM step "k; ... | ... -> ... => ... | ... -> k, ..." with a one-hot constant
 *   (first `=:+`, then `=+`); see eval_tensor.c.
 * - %cd operands: see eval_code.c. Intermediates (non-primitive sub-expressions) are
 *   computed right before the assignment, together with any existing
 *   non-differentiable computed tensor they read (a learning-rate schedule), the
 *   latter once per top-level item. Standalone assignments without ~logic are
 *   pointwise, `*` and `/` included (OCANNL has no default for them); `fma (a, b,
 *   c)` with three distinct operands composes (COMPOSE_TERN).
 * - A fill (`g =: 0`, zero_grads, `!@s`) has a LOGIC_POINTWISE_UN step with nrhs 0.
 * - `let%cd x = e` whose value is a tensor computed by e makes that tensor
 *   non-differentiable (its inner tensors keep their gradients).
 * - `**.` is the unary op pointpow_ ~p with p a compile-time number (OCANNL's pointpow);
 *   `fma a b c` (the op) is pointwise; ops accept an uncurried tuple `where (c, a, b)`. */
#ifndef TDSL_EVAL_H
#define TDSL_EVAL_H

#include "ast.h"
#include "ctx.h"
#include "graph.h"
#include "strtab.h"

typedef struct Value Value;
typedef struct Env Env;
typedef struct Fn Fn;
typedef struct DeclScope DeclScope;
typedef struct OpInst OpInst;

typedef enum VKind {
  V_UNIT, V_INT, V_FLOAT, V_BOOL, V_STRING,
  V_LIST, V_TUPLE, V_ARRAY, /* [ ], ( , ), [| |] */
  V_SYM,                    /* index symbol */
  V_DIM,                    /* dynamic dimension: `dim ()` or `?` */
  V_TENSOR,                 /* a tensor's value or (grad) gradient */
  V_CODE,                   /* %cd code */
  V_FN,                     /* closure, op or builtin (possibly partially applied) */
  V_CAPTURE,                /* an einsum's captured axis label or row variable (dim) */
  V_NDLIT,                  /* a packed literal (E_NDLIT): what the list or array of
                               ndlit_expand would be; made a tensor without unpacking,
                               unpacked (val_unpack) where its elements are used */
} VKind;

struct Value {
  VKind kind;
  Loc loc;          /* where the value was written (string literals: the quote) */
  long long i;      /* V_INT, V_BOOL */
  double f;         /* V_FLOAT */
  const char *s;    /* V_STRING */
  PtrVec items;     /* V_LIST/V_TUPLE/V_ARRAY: Value* */
  IndexSym *sym;    /* V_SYM */
  DimSym *dsym;     /* V_DIM */
  Tensor *t;        /* V_TENSOR */
  bool grad;        /* V_TENSOR: the gradient node */
  int slot;         /* V_TENSOR: slot inside an op body (0 = t, k = tk); -1 = none */
  bool is_number;   /* V_TENSOR: a number lifted to a constant tensor */
  Code code;        /* V_CODE */
  Fn *fn;           /* V_FN */
  CaptureRef *cap;  /* V_CAPTURE */
  const NdLit *lit; /* V_NDLIT */
};

/* Lexical environments are immutable linked lists; closures capture the head. */
struct Env {
  const char *name;
  Value *v;         /* NULL: a top-level binding that failed (env_poison) */
  Loc loc;          /* global: the bound name (none for built-ins) */
  bool global;      /* a top-level binding (inline declarations are searched before these) */
  int seq;          /* global: its position among the top-level bindings (1, 2, ...) */
  Env *shadowed;    /* global: the previous top-level binding of the same name */
  const StrTab *index; /* global: st->global_index (name -> newest global node) */
  Env *next;
};

typedef enum Mode { M_OP, M_CD } Mode;

/* Inline declarations `{ w }` are created once per scope: a top-level binding, or one
 * application of a function's unit parameter `()`. Keyed by the record expression. */
struct DeclScope {
  DeclScope *parent;
  bool toplevel;
  const char *label; /* qualifier from a ~label argument ("L1"), or NULL */
  PtrVec keys;       /* const Expr* */
  PtrVec tensors;    /* Tensor* */
  PtrVec idents;     /* const char*: the declared identifiers */
  Env *captures;     /* names bound by einsum capture lists, hoisted the same way */
  const Expr *body;  /* the scope's code: where hoisted captures are looked for (NULL: none) */
};

/* The op instance whose forward/backward body is being evaluated. */
struct OpInst {
  UpdateStep *step;
  Tensor *slots[4]; /* slot 0 = result, k = argument k */
  bool grad[4];     /* %cd only: argument k is a gradient (`lr *. p.grad`) */
  int nslots;
};

/* What every evaluation needs from its lexical position. */
typedef struct Frame {
  Env *env;
  Mode mode;
  DeclScope *decls;
  OpInst *op; /* non-NULL inside an op body */
} Frame;

typedef struct St St;
typedef Value *(*BuiltinFn)(St *st, Fn *f, const Frame *call, Loc loc);

typedef enum FnKind { FN_CLOSURE, FN_OP, FN_BUILTIN } FnKind;

struct Fn {
  FnKind kind;
  const char *name;
  int nparams;
  Param **params;
  Value **bound;       /* per parameter; NULL = not applied yet */
  Expr *body;          /* FN_CLOSURE */
  const OpDef *op;     /* FN_OP */
  BuiltinFn builtin;   /* FN_BUILTIN */
  Frame fr;            /* captured at definition */
  DeclScope *unit_scope; /* created when the unit parameter was applied */
  Loc loc;             /* FN_CLOSURE: where it is defined (its binding's name) */
};

enum { MAX_CALL_DEPTH = 2000 };

/* Staging state. */
struct St {
  Ctx *c;
  Arena *a;
  Graph *g;
  Env *globals;        /* top-level environment, newest first (only ever prepended to) */
  StrTab global_index; /* name -> its newest global Env node (env_lookup, linear programs) */
  StrTab tensor_names; /* tensor name -> Tensor* (unique names without a scan) */
  PtrVec opened;       /* const char*: files already opened (realpath) */
  PtrVec loading;      /* const char*: the files being evaluated, outermost first */
  const char *stdlib_dir;
  const SrcFile *file; /* the file whose items are being evaluated */
  int depth;           /* nesting of function applications */
  const SrcFile *main_file; /* the user's file (prelude and stdlib come first) */
  int noted;           /* diag.errors when the last application note chain ended */
  Loc user_loc;        /* the innermost application in the user's file: operations
                          that library code (prelude, stdlib) creates are reported there */
  const Binding *defining; /* the top-level binding being evaluated (diagnostics: a name
                              used in its own definition) */
  const Fn *calling;   /* the innermost closure being applied (diagnostics: recursion) */
  Loc calling_loc;     /* where it is applied */
  const char *user_fn; /* the function applied at user_loc (diagnostics: "'-' in 'mse'") */
  const Program *program; /* the file whose items are being evaluated (diagnostics: a
                              name bound further down) */
  PtrVec emitted;      /* Tensor*: old non-differentiable tensors whose forward code an
                          intermediate already pulled into the current top-level item */
  PtrVec qualified;    /* Qualified*: inline declarations named with a label ("L1.w") */
  GraphWalk walk;      /* subgraph_forward's, reused: its walks are small, the graph large */
};

/* eval.c */
Value *eval(St *st, const Frame *fr, const Expr *e);
Value *val_new(St *st, VKind k, Loc loc);
Value *val_int(St *st, long long i, Loc loc);
Value *val_float(St *st, double f, Loc loc);
Value *val_tensor(St *st, Tensor *t, Loc loc);
Value *val_code(St *st, Loc loc);
/* A fresh anonymous dynamic dimension (`?`, or `dim ()` before its binding names it). */
Value *val_dyndim(St *st, Loc loc);
/* Names v's index symbol or dynamic dimension after its binding (`let n = index 4`,
 * `let n = dim ()`) unless it has a name; false (error reported) when another symbol of
 * either kind has that name: --set and the runtime set them by name. */
bool runtime_sym_name(St *st, Value *v, const char *name, Loc loc);
const char *val_kind_name(const Value *v);
/* v, or for a packed literal the list or array it stands for, element by element. */
Value *val_unpack(St *st, Value *v);
/* Whether v is a list (a packed one included). */
bool val_is_list(const Value *v);
bool val_is_number(const Value *v);
double val_number(const Value *v);
/* The constant of `!. x` or `!.. n` (op "!." or "!.."); false (error reported at loc)
 * at the operand's loc for anything but a compile-time number, at the operator's (at)
 * for a float under `!..`. */
bool bang_number(St *st, const char *op, const Value *x, Loc at, Loc loc, double *out);
Value *apply(St *st, Value *fnv, int nargs, Value **args, const Arg **argdesc,
             const Frame *call, Loc loc);
Env *env_bind(St *st, Env *env, const char *name, Value *v);
/* A top-level binding: prepended to st->globals and indexed by name. */
void env_bind_global(St *st, const char *name, Value *v, Loc loc);
Value *env_lookup(const Frame *fr, St *st, const char *name);
/* A top-level binding that failed binds its name to nothing: env_lookup gives NULL and
 * env_poisoned true, so uses add no "unknown identifier" error to the root one. */
bool env_poisoned(const Frame *fr, const char *name);
void env_poison(St *st, const char *name);
/* The value bound to a parameter of f by name (labeled or positional), or NULL. */
Value *fn_param(Fn *f, const char *name);

/* eval_tensor.c */
Tensor *tensor_new(St *st, TensorKind kind, Loc loc);
UpdateStep *step_new(St *st, LogicKind kind, Tensor *lhs, int nrhs, Tensor **rhs, Loc loc);
/* Whether loc is inside the installed library (prelude, stdlib). */
bool loc_in_library(const St *st, Loc loc);
/* loc, or the user's application site when loc is inside the prelude or stdlib. */
Loc site_loc(const St *st, Loc loc);
Tensor *const_scalar(St *st, double x, const char *label, Loc loc);
/* Converts a value to a tensor (numbers and literals become constants); NULL + error. */
Tensor *to_tensor(St *st, const Frame *fr, Value *v, Loc loc, const char *what);
Value *eval_record(St *st, const Frame *fr, const Expr *e);
Value *eval_literal_list(St *st, const Frame *fr, Value *v, Loc loc);
/* Labels (dimension labels, ~label qualifiers) are identifier-like; else a located error
 * naming `what`. */
bool label_ok(St *st, const char *label, Loc loc, const char *what);
bool rowdecl_from_value(St *st, Value *v, RowDecl *out, Loc loc, const char *what);
void name_tensor(St *st, Tensor *t, const char *ident, const char *label);
/* After staging: each label-qualified name whose bare identifier no other tensor has
 * ("L1.w" when there is no other w) gets that identifier as an alias. */
void alias_unqualified(St *st);
void add_name(St *st, const char *name, Tensor *t);
bool name_used(St *st, const char *name);
Tensor *sym_tensor(St *st, IndexSym *sym, Loc loc);
void install_builtins(St *st);
/* A builtin from a mini signature: "x" positional, "~x" labeled, "?x" optional, "()". */
void builtin_install(St *st, const char *name, const char *sig, BuiltinFn fn);

/* eval_init.c */
/* Makes t's init the program of the pointwise expression graph rooted at root (and
 * t's declared rows those of its shaped leaves); false after a located error. */
bool init_from_tensor(St *st, Tensor *t, const Tensor *root, Loc loc);
void install_init_builtins(St *st);

/* eval_math.c */
/* The folded value when f is a prelude operation with a compile-time meaning applied to
 * numbers (*done set; NULL then means an error was reported); else NULL, *done false. */
Value *fold_math(St *st, Fn *f, Loc loc, bool *done);
void install_math_builtins(St *st);

/* eval_op.c */
Value *op_apply(St *st, Fn *f, const Frame *call, Loc loc);
/* Parses a logic string into a step kind (and spec); reports errors at the string. */
bool logic_from_value(St *st, const Frame *call, Value *logic, int nargs, LogicKind *kind,
                      const Spec **spec, bool *use_padding, Loc *spec_loc);

/* graph_code.c: marks (in a char array indexed by tensor id) the subgraph of t.
 * mode 0: all of it; 1: stop at tensors older than new_from unless they are
 * non-differentiable computed tensors; 2: stop at every tensor older than new_from. */

/* eval_code.c */
Value *eval_assign(St *st, const Frame *fr, const Expr *e);
Value *eval_field(St *st, const Frame *fr, const Expr *e);
Value *eval_comment(St *st, const Frame *fr, const Expr *e);
void code_append(St *st, Code *dst, const Code *src);
/* Evaluates body, which must give code (appended to dst) or unit; false after an error
 * naming `what` ("'for'", "a ~~ comment"). */
bool eval_code_body(St *st, const Frame *fr, const Expr *body, Code *dst, const char *what);
/* Forward code of the subgraph of t in creation order. mode 0: all of it; 1: tensors
 * with id >= new_from and the non-differentiable computed tensors they read; 2: only
 * tensors with id >= new_from. */
void subgraph_forward(St *st, Tensor *t, Code *out, int mode, int new_from);

#endif
