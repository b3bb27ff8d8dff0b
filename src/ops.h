/* ops.h: the primitive numeric operations (OCANNL's unary,
 * binary and ternary primitives). The C core knows
 * only these; every user-visible tensor operation is defined in the .tdsl prelude. */
#ifndef TDSL_OPS_H
#define TDSL_OPS_H

#include <stdbool.h>

typedef enum PrimOp {
  /* unary */
  OP_ID, OP_RELU, OP_SAT01, OP_EXP, OP_LOG, OP_EXP2, OP_LOG2, OP_SIN, OP_COS, OP_SQRT,
  OP_RECIP, OP_RECIP_SQRT, OP_NEG, OP_TANH, OP_NOT, OP_ERF,
  /* binary */
  OP_ARG1, OP_ARG2, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_RELU_GATE, OP_SAT01_GATE,
  OP_LT, OP_EQ, OP_NE, OP_OR, OP_AND, OP_MOD, OP_MAX, OP_MIN,
  /* ternary */
  OP_WHERE, OP_FMA,
  OP__COUNT
} PrimOp;

typedef struct OpInfo {
  const char *name;  /* identifier: "relu", "add", "relu_gate", ... */
  const char *infix; /* binary infix token in %cd ("+", "-?/", "@^"), or NULL */
  int arity;         /* 1, 2 or 3 */
  bool accum_ok;     /* usable as an assignment accumulator (=+, =:@^, ...) */
} OpInfo;

extern const OpInfo op_info[OP__COUNT];

/* Looks up an op by identifier (arity 0 = any) or by infix token; -1 if none. */
int op_by_name(const char *name, int arity);
int op_by_infix(const char *infix);
/* Neutral element of an accumulator (0 for add, 1 for mul, -inf for max, ...).
 * For OP_ARG2 (plain "=:") it is 0. */
double op_neutral(PrimOp accum);
/* Reference semantics, exactly interpret_unop/binop/ternop. Used by tests and folding. */
double op_eval(PrimOp op, double a, double b, double c);

/* One step of an initializer program, evaluated by `init` at every cell i of the
 * tensor with a stack: leaves push, IO_PRIM pops its arity and pushes the result.
 * Random leaves are numbered in program order (their threefry sub-stream); the fans
 * are the tensor's own (products of its input resp. output dims), known after
 * inference and written into the model as constants. */
typedef enum InitOpKind {
  IO_CONST,   /* value */
  IO_RANGE,   /* i */
  IO_VALUES,  /* values[i % nvalues] */
  IO_UNIFORM, /* uniform [0,1) */
  IO_NORMAL,  /* standard normal */
  IO_FAN_IN,
  IO_FAN_OUT,
  IO_PRIM,    /* op (any primitive: arity 1, 2 or 3) */
} InitOpKind;

typedef struct InitOp {
  InitOpKind kind;
  double value;
  const double *values;
  int nvalues;
  PrimOp op;
} InitOp;

#endif
