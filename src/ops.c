/* ops.c: the primitive op table and its reference semantics. */
#include "ops.h"

#include <math.h>
#include <string.h>

const OpInfo op_info[OP__COUNT] = {
    [OP_ID] = {"id", NULL, 1, false},
    [OP_RELU] = {"relu", NULL, 1, false},
    [OP_SAT01] = {"sat01", NULL, 1, false},
    [OP_EXP] = {"exp", NULL, 1, false},
    [OP_LOG] = {"log", NULL, 1, false},
    [OP_EXP2] = {"exp2", NULL, 1, false},
    [OP_LOG2] = {"log2", NULL, 1, false},
    [OP_SIN] = {"sin", NULL, 1, false},
    [OP_COS] = {"cos", NULL, 1, false},
    [OP_SQRT] = {"sqrt", NULL, 1, false},
    [OP_RECIP] = {"recip", NULL, 1, false},
    [OP_RECIP_SQRT] = {"recip_sqrt", NULL, 1, false},
    [OP_NEG] = {"neg", NULL, 1, false},
    [OP_TANH] = {"tanh", NULL, 1, false},
    [OP_NOT] = {"not", NULL, 1, false},
    [OP_ERF] = {"erf", NULL, 1, false},
    [OP_ARG1] = {"fst", "-@>", 2, false},
    [OP_ARG2] = {"snd", "-/>", 2, true},
    [OP_ADD] = {"add", "+", 2, true},
    [OP_SUB] = {"sub", "-", 2, true},
    [OP_MUL] = {"mul", "*", 2, true},
    [OP_DIV] = {"div", "/", 2, true},
    [OP_POW] = {"pow", "**", 2, true},
    [OP_RELU_GATE] = {"relu_gate", "-?/", 2, true},
    [OP_SAT01_GATE] = {"sat01_gate", "-?^", 2, true},
    [OP_LT] = {"lt", "<", 2, false},
    [OP_EQ] = {"eq", "=", 2, false},
    [OP_NE] = {"ne", "<>", 2, false},
    [OP_OR] = {"or_", "||", 2, true},
    [OP_AND] = {"and_", "&&", 2, true},
    [OP_MOD] = {"mod_", "%", 2, false},
    [OP_MAX] = {"max", "@^", 2, true},
    [OP_MIN] = {"min", "@-", 2, true},
    [OP_WHERE] = {"where", NULL, 3, false},
    [OP_FMA] = {"fma", NULL, 3, false},
};

int op_by_name(const char *name, int arity) {
  for (int i = 0; i < OP__COUNT; i++)
    if (strcmp(op_info[i].name, name) == 0 && (arity == 0 || op_info[i].arity == arity)) return i;
  return -1;
}

int op_by_infix(const char *infix) {
  for (int i = 0; i < OP__COUNT; i++)
    if (op_info[i].infix && strcmp(op_info[i].infix, infix) == 0) return i;
  return -1;
}

double op_neutral(PrimOp accum) {
  switch (accum) {
  case OP_MUL: case OP_DIV: case OP_POW: case OP_AND: return 1.0;
  case OP_MAX: return -INFINITY;
  case OP_MIN: return INFINITY;
  default: return 0.0;
  }
}

double op_eval(PrimOp op, double a, double b, double c) {
  switch (op) {
  case OP_ID: return a;
  case OP_RELU: return a >= 0.0 ? a : 0.0;
  case OP_SAT01: return a <= 0.0 ? 0.0 : a >= 1.0 ? 1.0 : a;
  case OP_EXP: return exp(a);
  case OP_LOG: return log(a);
  case OP_EXP2: return pow(2.0, a);
  case OP_LOG2: return log(a) / log(2.0);
  case OP_SIN: return sin(a);
  case OP_COS: return cos(a);
  case OP_SQRT: return sqrt(a);
  case OP_RECIP: return 1.0 / a;
  case OP_RECIP_SQRT: return 1.0 / sqrt(a);
  case OP_NEG: return -a;
  case OP_TANH: return tanh(a);
  case OP_NOT: return a == 0.0 ? 1.0 : 0.0;
  case OP_ERF: return erf(a);
  case OP_ARG1: return a;
  case OP_ARG2: return b;
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV: return a / b;
  /* libm's pow for every exponent, integer ones included, in every renderer and in the
   * init runtime: glibc's pow is correctly rounded in practice (< 0.52 ulp), while
   * repeated squaring loses up to about n ulps at x^n (3 at n = 7, 70 at n = 100), and
   * C's pow is exact for negative bases with integer exponents too. */
  case OP_POW: return pow(a, b);
  case OP_RELU_GATE: return a > 0.0 ? b : 0.0;
  case OP_SAT01_GATE: return a > 0.0 && a < 1.0 ? b : 0.0;
  case OP_LT: return a < b ? 1.0 : 0.0;
  case OP_EQ: return a == b ? 1.0 : 0.0;
  case OP_NE: return a != b ? 1.0 : 0.0;
  case OP_OR: return a != 0.0 || b != 0.0 ? 1.0 : 0.0;
  case OP_AND: return a != 0.0 && b != 0.0 ? 1.0 : 0.0;
  case OP_MOD: return fmod(a, b);
  /* OCaml's Float.max/min: NaN if either operand is NaN (unlike C's fmax). */
  case OP_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case OP_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case OP_WHERE: return a != 0.0 ? b : c;
  case OP_FMA: return a * b + c;
  default: return NAN;
  }
}
