/* ir_c.h: the one C rendering of loop-IR expressions and statements, shared by --emit-c
 * (backends/gccjit/emit_c.c) and the CUDA kernels (backends/cuda/cuda_emit.c), so an IR
 * construct is taught to both by writing it once here.
 *
 * What differs between the two goes through CRender: the names of buffers and symbols,
 * and a statement hook that may render a statement itself (a CUDA register accumulator,
 * --check-bounds tests before a store) before the shared rendering runs.
 *
 * The rendered code needs, from the including source: TDSL_NAN and TDSL_INF (float
 * constants), and the per-type op helpers of cr_helpers (which need TDSL_DEV). */
#ifndef TDSL_IR_C_H
#define TDSL_IR_C_H

#include "ir.h"

typedef struct CRender CRender;
struct CRender {
  FILE *o;
  const IrModule *m;
  const char *buf; /* buffer N is named BUF followed by N: "tdsl_buf_", "b" */
  const char *sym; /* index symbol N: "tdsl_sym_", "s" */
  const char *dim; /* dynamic dimension N (an int): "tdsl_dim_"; NULL: that */
  const char *fn;  /* function N is FN followed by N: "tdsl_fn_" (NULL: that) */
  const char *call_args; /* the arguments of a call of another function (NULL: none) */
  bool idx32;      /* affine indices in int arithmetic (the caller checked they fit) */
  bool own_math;   /* a float exp, tanh or log is tdsl_exp_f32 / tdsl_tanh_f32 /
                    * tdsl_log_f32 (the gccjit backend's own, jit_stmt.c; the caller
                    * prints ir_c_own_math) rather than libm's expf / tanhf / logf */
  /* Called first for every statement; returns true when it rendered s completely
   * (false: the shared rendering follows). NULL: no hook. */
  bool (*stmt)(CRender *r, const Stmt *s, int ind);
  void *user;
};

/* The op helpers tdsl_op_NAME_f32/_f64 (relu, max, pow, ...) with op_eval's semantics,
 * NaN included; each is declared with the macro TDSL_DEV. */
extern const char cr_helpers[];
/* The definitions of tdsl_exp_f32, tdsl_tanh_f32 and tdsl_log_f32 in C, computing
 * what the gccjit backend's do. */
extern const char ir_c_own_math[];

void cr_indent(CRender *r, int ind);
/* A C comment holding text (names, file paths), which cannot end it early. */
void cr_comment(FILE *o, const char *text);
/* A constant of type float (f32) or double, rounded from the double as a cast does. */
void cr_const(FILE *o, double v, bool f32);
/* x as a value of type float (f32) or double. */
void cr_expr(CRender *r, const IrExpr *x, bool f32);
/* BUF[flat index] */
void cr_access(CRender *r, const Access *acc);
/* The affine form as an expression of type long (int when idx32) over the loop variables
 * iN and the symbols. */
void cr_aff(CRender *r, const Aff *f);
/* An extent (ext times the product dext of dynamic dimensions) as a long. */
void cr_ext(CRender *r, long ext, int dext);
/* accum(lhs, rhs) where lhs is C text and rhs an expression, or C text when rhs is NULL. */
void cr_accum(CRender *r, PrimOp op, bool f32, const char *lhs, const IrExpr *rhs, const char *rhs_text);
/* The value a store writes: accum(old cell, val), or val when accum is OP_ARG2. */
void cr_store_value(CRender *r, const Stmt *s, bool f32);
/* BUF[index] = value; and a new line. */
void cr_store(CRender *r, const Stmt *s);
void cr_stmt(CRender *r, const Stmt *s, int ind);
void cr_stmts(CRender *r, const PtrVec *body, int ind);

#endif
