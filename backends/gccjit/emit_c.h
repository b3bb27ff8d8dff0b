/* emit_c.h: pieces of the C rendering (emit_c.c, over the shared src/ir_c.c) shared
 * with the rendering of scheduled statements (emit_c_sched.c). Internal to
 * backends/gccjit. */
#ifndef TDSL_EMIT_C_H
#define TDSL_EMIT_C_H

#include "ir_c.h"
#include "jit.h"

/* --check-bounds tests of an access / of every load of an expression. */
void c_check_access(CRender *r, const Access *acc, const char *what, int ind);
void c_check_expr(CRender *r, const IrExpr *e, const char *what, int ind);

/* emit_c_sched.c: an S_LOOP with accs > 1 and an S_KERNEL (ir.h) as C. */
void c_reduce_loop(CRender *r, const Stmt *loop, int ind, bool check);
void c_kernel(CRender *r, const Stmt *s, int ind);
/* A parallel S_KERNEL: its two outlined functions PREFIX_K and PREFIX_{K+1} (and their
 * argument struct) at file scope, and the code that runs them through the pool. */
void c_kernel_outline(CRender *r, const Stmt *s, const char *prefix, int k);
void c_kernel_parallel(CRender *r, const Stmt *s, int ind, const char *prefix, int k);

#endif
