/* emit_c.h: pieces of the C rendering (emit_c.c) shared with the rendering of
 * scheduled statements (emit_c_sched.c). Internal to backends/gccjit. */
#ifndef TDSL_EMIT_C_H
#define TDSL_EMIT_C_H

#include "jit.h"

void c_const(FILE *o, double v, bool f32);
void c_expr(FILE *o, const IrModule *m, const IrExpr *e, bool f32);
void c_check_access(FILE *o, const IrModule *m, const Access *acc, const char *what, int ind);
void c_check_expr(FILE *o, const IrModule *m, const IrExpr *e, const char *what, int ind);

/* emit_c_sched.c: an S_LOOP with accs > 1 and an S_KERNEL (ir.h) as C. */
void c_reduce_loop(FILE *o, const IrModule *m, const Stmt *loop, int ind, bool check);
void c_kernel(FILE *o, const IrModule *m, const Stmt *s, int ind);

#endif
