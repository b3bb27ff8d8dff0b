/* jit_emit.h: the interface between the gccjit module layer (jit.c: contexts, storage,
 * symbols, functions, compile and link) and the statement renderer (jit_stmt.c: loops,
 * guards, stores, fills, expressions, op helpers). Internal to backends/gccjit.
 *
 * The renderer never names storage directly: it asks the module layer for a buffer's
 * array lvalue, a symbol's value and a call of another function, so the storage model
 * (globals, an instance struct, ...) changes in one place. */
#ifndef TDSL_JIT_EMIT_H
#define TDSL_JIT_EMIT_H

#include "jit.h"

typedef struct J {
  Arena *a;
  gcc_jit_context *c;
  const IrModule *m;
  const JitOpts *o;
  gcc_jit_type *t_void, *t_int, *t_long, *t_bool, *t_str, *t_el[2];
  JitInstance inst;         /* the instance struct: one field per buffer and symbol */
  /* a group of a split compile: storage cluster c is parts[c] at the instance plus
   * base_offs[c] (jit_group.c); store NULL: all storage is inst */
  const struct JitStore *store;
  JitInstance *parts;
  gcc_jit_lvalue **base_offs;
  gcc_jit_function **funcs;    /* by IR index: defined or imported here, or NULL */
  gcc_jit_param **self_params; /* their instance parameters */
  gcc_jit_function *helpers[2][OP__COUNT];
  gcc_jit_function *f_snprintf;
  /* the function being built */
  gcc_jit_function *fn;
  gcc_jit_rvalue *self;     /* its instance pointer parameter */
  gcc_jit_block *blk;
  gcc_jit_lvalue **vars;
  int nblocks;
  /* the vector bytes the context compiles for: its -march's, 16 without one (plain
   * x86-64). Wider asm (block transposes, 32- and 64-byte streamed stores) would not
   * assemble there: a module scheduled for the host and compiled again for the generic
   * target (an -march libgccjit does not know) renders those loops cell by cell. */
  int vec_bytes;
} J;

/* ---- provided by the module layer (jit.c) ---- */
/* A fresh context at opt_level with the module's types, options and runtime imports.
 * The instance type j->inst has every buffer's and symbol's field (whole), or only the
 * runtime's header. */
J *jit_begin(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch, int opt_level, bool whole);
/* Declares IR function i (NAME_fn_i) in j's context with the given kind. */
void jit_declare_func(J *j, int i, enum gcc_jit_function_kind kind);
/* Renders the body of the declared IR function i. */
void jit_define_func(J *j, int i);
/* Buffer b as an lvalue of array type, in the function being built. */
gcc_jit_lvalue *jm_buf(J *j, int b);
/* The current value of index symbol s (an int). */
gcc_jit_rvalue *jm_sym(J *j, int s);
/* The current value of dynamic dimension d (an int). */
gcc_jit_rvalue *jm_dim(J *j, int d);
/* A call of IR function callee from the function being built. */
gcc_jit_rvalue *jm_call(J *j, int callee);
/* --check-bounds: the instance's fault word (an int, nonzero once a check failed) and its
 * message buffer (char[INST_FAULT_MSG_LEN]); the runtime reads and clears them after a call. */
gcc_jit_lvalue *jm_fault(J *j);
gcc_jit_rvalue *jm_fault_msg(J *j);

/* ---- provided by the renderer (jit_stmt.c) ---- */
/* A fresh block of fn with a unique name. */
gcc_jit_block *js_new_block(J *j, gcc_jit_function *fn);
/* Renders body into j->blk of j->fn (j->vars set); leaves j->blk open at the end. */
void js_emit_stmts(J *j, const PtrVec *body);
/* Pieces for the rendering of scheduled statements: an affine form (long), an
 * expression in element type el, and --check-bounds traps (into j->blk). */
gcc_jit_rvalue *js_aff(J *j, const Aff *f);
/* An extent: ext, times the product dext of dynamic dimensions when not 0 (long). */
gcc_jit_rvalue *js_ext(J *j, long ext, int dext);
gcc_jit_rvalue *js_expr(J *j, const IrExpr *e, int el);
void js_check_access(J *j, const Access *acc, const char *what);
void js_check_expr(J *j, const IrExpr *e, const char *what);

/* ---- provided by jit_sched.c: what the schedule pass (src/schedule.h) adds ---- */
/* An S_LOOP with accs > 1: the reduction in partial sums. */
void js_reduce_loop(J *j, const Stmt *loop);
/* An S_KERNEL: the blocked, packed, register-tiled contraction (rows split among
 * threads when the kernel is parallel). */
void js_kernel(J *j, const Stmt *s);
/* An S_PREFETCH: __builtin_prefetch(for writing) of each 64-byte line. */
void js_prefetch(J *j, const Stmt *s);
/* An S_LOOP marked parallel: the body outlined, the range split by the thread pool. */
void js_parallel_loop(J *j, const Stmt *loop);

#endif
