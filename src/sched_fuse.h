/* sched_fuse.h: the traffic part of the schedule pass (src/schedule.h): fusion across
 * the functions a routine calls.
 *
 * A routine (an exported seq whose name is an identifier: not a T.forward/T.backprop)
 * runs its callees in turn, each a handful of small loop nests; between them every
 * intermediate goes through memory and every gradient is zeroed in a pass of its own.
 * The pass lays the callees' statements out as one list and rewrites it:
 *
 * - Constant fills (`fill B v`, or a nest storing a constant in every cell once) sink to
 *   just before the first statement that touches B. When that statement writes every
 *   cell of B once, the fill disappears: an overwrite makes it dead, an accumulation
 *   becomes an overwrite with accum(v, value) (a gradient's first `=+` after its
 *   zeroing, the same bits).
 * - Adjacent nests fuse over their common outer loops (same extents, in order) when
 *   every buffer one of them writes and both touch is accessed, in every access, with
 *   one axis index equal to each common loop variable: iterations of the common loops
 *   then touch disjoint cells, so running both bodies per iteration keeps every
 *   dependence. A fill next to a nest joins it as a nest over B's axes. Bias + relu
 *   after a small matmul, an SGD update's passes over a parameter, a batch row's whole
 *   forward pass become one nest. Nests the schedule makes kernels or partial-sum
 *   reductions stay apart; a fusion of a parallel nest must stay parallel; a fused nest
 *   holds at most FUSE_MAX_STORES stores (checking a fusion is linear in the nests).
 * - Row fusion: nests of different shapes fuse under their common outer loops alone,
 *   with the same legality, where the buffers they touch pass L2 and one iteration's
 *   share fits in it (a softmax's max, shifted exp, sum and division become one loop
 *   over rows, each pass finding the row in cache). A partial-sum reduction may join
 *   when its summed loop stays inside (the schedule gives it the sums there); a kernel
 *   does not, nor the pointwise nest a kernel takes as its epilogue. Not for the CUDA
 *   back end (SchedOpts.gpu), which maps each nest's whole iteration space onto threads.
 * - A nest the schedule makes a kernel followed by a pointwise nest on its result both
 *   leave their callees (sched_epilogue_ok), so that they are adjacent in a new function
 *   and the schedule fuses the second into the kernel's epilogue.
 * - The result is grouped back: a callee whose statements all came through unchanged
 *   and in place stays a call (its code is shared with T.forward and the like); the
 *   rest goes into new functions ROUTINE.fuseK of at most FUSE_PART top-level nests
 *   (gcc's time grows faster than linearly in a function's size). A callee other
 *   functions call too is then compiled twice, so such copies are limited per module
 *   (FUSE_COPY_BUDGET statements; rewrites past it are not made).
 *
 * Every rewrite is exact (no reassociation), so --strict-fp keeps them; --check-bounds
 * runs without them (sched_module does not call this). --dump-ir shows the fused nests
 * with each joined assignment's comment inside. */
#ifndef TDSL_SCHED_FUSE_H
#define TDSL_SCHED_FUSE_H

#include "schedule.h"

/* What the schedule would do with a top-level nest on its own (schedule.c). */
enum { SCHED_APART = 1, /* a kernel (or a split over tiles): keep it whole */
       SCHED_PAR = 2,   /* its outer loop runs in parallel */
       SCHED_SUMS = 4 }; /* partial sums: its loops are not fused with another's */
int sched_nest_plan(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest);
/* The perfect nest writes every cell of its target once (*store: its store). */
bool sched_each_cell_once(Stmt *nest, const IrModule *m, Stmt **store);
/* Does e load from buffer buf? */
bool sched_reads_buf(const IrExpr *e, int buf);
/* Calls fn(buf, arg) for each load of e (a buffer read twice: twice). */
void sched_each_load(const IrExpr *e, void (*fn)(int buf, void *arg), void *arg);
/* `fill B v` then a nest accumulating into every cell of B once, as one overwriting
 * nest (NULL when it is not that). */
Stmt *sched_fill_nest(Arena *a, const IrModule *m, const Stmt *fill, Stmt *nest);
/* Will the schedule fuse `fill` into the contraction kernel of nest (which then stores
 * its first k block instead of adding: no pass over B, no read of it)? */
bool sched_fill_into_kernel(Arena *a, const IrModule *m, const SchedOpts *o, const Stmt *fill, Stmt *nest);

/* A copy of s with loop variable v renamed map[v] (every variable s uses). */
Stmt *sched_stmt_renamed(Arena *a, const Stmt *s, const int *map);
/* Would the nest become a top-level kernel that the pointwise nest `next` can be fused
 * into as its epilogue (schedule.c)? */
bool sched_epilogue_ok(Arena *a, const IrModule *m, const SchedOpts *o, Stmt *nest, const Stmt *next);
/* Fuses `comment` (may be NULL) and the pointwise nest after the top-level kernel `kern`
 * into its epilogue (Kernel.epilogue: bias + activation after a matmul): the nest runs a
 * loop over the kernel's rows around one over its columns, and each of its stores writes
 * the kernel's target cell of another buffer (not the operands), reading that cell of
 * the target or of a buffer it writes, and any other buffer anywhere. False when it is
 * not that (kern unchanged). */
bool sched_fuse_epilogue(Arena *a, Stmt *kern, const Stmt *comment, const Stmt *nest);

/* m with its routines fused (a new module sharing m's buffers and unchanged
 * functions; m is not modified). */
IrModule *sched_fuse_routines(Arena *a, const IrModule *m, const SchedOpts *o);

#endif
