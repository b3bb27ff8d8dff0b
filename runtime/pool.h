/* pool.h: the runtime's thread pool (pool.c), internal to libtdslrt.
 *
 * A compiled model runs its parallel loops through the hook in its instance header
 * (slots 2 and 3, set by tdsl_open; see jit_sched.c): fn(arg, lo, hi) over a split of
 * [0, n). Thread t (the caller is 0) runs chunks of the t-th of T equal ranges, then
 * steals chunks from the others' (which thread runs which chunk varies on a busy
 * machine). Every parallel loop writes each cell from exactly one iteration,
 * in the same order as serially, so results depend neither on the thread count nor on
 * the split. */
#ifndef TDSL_POOL_H
#define TDSL_POOL_H

typedef void (*tdsl_par_fn)(void *arg, long lo, long hi);
typedef struct tdsl_pool tdsl_pool;

/* A pool running loops on nthreads threads (the caller and nthreads - 1 workers);
 * NULL if threads cannot be created. */
tdsl_pool *tdsl_pool_new(int nthreads);
void tdsl_pool_free(tdsl_pool *p);
/* Frees a pool whose threads are not in this process (the child of a fork after the
 * pool started), without joining them or touching their locks. */
void tdsl_pool_forget(tdsl_pool *p);
int tdsl_pool_threads(const tdsl_pool *p);
/* Runs fn over [0, n) split among the threads; returns when every chunk is done. */
void tdsl_pool_run(tdsl_pool *p, tdsl_par_fn fn, void *arg, long n);

#endif
