/* pool.c: a fixed pool of pthreads for the parallel loops of compiled models (pool.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "pool.h"

/* Worker stacks hold the packed operand panels of contraction kernels (up to ~1 MiB). */
enum { WORKER_STACK = 16 << 20 };
/* A training step runs parallel loops a few microseconds apart, and waking a thread
 * through the kernel (futex, an IPI under a hypervisor) costs about as much as such a
 * loop: both sides spin this long before they sleep, yielding the core now and then
 * (when other processes load the machine, a spinning thread must not keep the thread it
 * waits for off the core). */
enum { SPIN_NS = 200 * 1000 };

typedef struct Worker {
  tdsl_pool *p;
  pthread_t th;
} Worker;

/* A loop is published as fn, arg, count and grain, then gen is bumped. Threads take
 * chunks by advancing `claim`, which holds the loop's generation (high 32 bits) with
 * its next iteration, so a thread that saw an older loop can claim nothing of a newer
 * one; the caller returns when `done` reaches count, not waiting for threads that took
 * no chunk (on a busy machine a worker may get no core for milliseconds). */
struct tdsl_pool {
  int n;                  /* threads, the caller included */
  Worker *w;              /* n - 1 workers */
  pthread_mutex_t mu;     /* sleeping and waking only */
  pthread_cond_t go, fin;
  atomic_ulong gen;       /* bumped for every loop */
  atomic_ullong claim;    /* generation << 32 | the first iteration not taken */
  atomic_long done;       /* iterations of the current loop finished */
  atomic_int sleepers;    /* workers blocked (or about to block) on go */
  atomic_bool quit;
  /* the published loop; atomic because a late worker may read them while the next
   * loop is published (its claim then fails) */
  _Atomic(tdsl_par_fn) fn;
  _Atomic(void *) arg;
  atomic_long count, grain;
};

typedef struct Loop {
  tdsl_par_fn fn;
  void *arg;
  long count, grain;
  uint64_t tag;
} Loop;

/* Runs chunks of loop l until none is left or a newer loop was published. */
static void run_chunks(tdsl_pool *p, const Loop *l) {
  for (;;) {
    unsigned long long c = atomic_load(&p->claim);
    if (c >> 32 != l->tag) return;
    long lo = (long)(c & 0xffffffffu);
    if (lo >= l->count) return;
    long hi = lo + l->grain < l->count ? lo + l->grain : l->count;
    if (!atomic_compare_exchange_weak(&p->claim, &c, l->tag << 32 | (unsigned long long)hi)) continue;
    l->fn(l->arg, lo, hi);
    if (atomic_fetch_add(&p->done, hi - lo) + (hi - lo) == l->count) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_broadcast(&p->fin);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Spins up to SPIN_NS until done(p, v) holds; says whether it does. */
static bool spin_until(tdsl_pool *p, bool (*done)(tdsl_pool *, long), long v) {
  long start = 0;
  for (int i = 0;; i++) {
    if (done(p, v)) return true;
    relax();
    if ((i & 63) == 63) {
      sched_yield(); /* a busy machine: let the thread we wait for run */
      long t = now_ns();
      if (!start) start = t;
      else if (t - start > SPIN_NS) return done(p, v);
    }
  }
}

static bool new_loop(tdsl_pool *p, long seen) { return (long)atomic_load(&p->gen) != seen || atomic_load(&p->quit); }
static bool all_done(tdsl_pool *p, long count) { return atomic_load(&p->done) == count; }

static void *worker(void *v) {
  Worker *w = v;
  tdsl_pool *p = w->p;
  long seen = 0;
  for (;;) {
    if (!spin_until(p, new_loop, seen)) {
      /* sleepers is raised before gen is read again, and tdsl_pool_run bumps gen
       * before it reads sleepers: one of the two sees the other. */
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);
      while (!new_loop(p, seen)) pthread_cond_wait(&p->go, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->quit)) break;
    seen = (long)atomic_load(&p->gen);
    /* the fields may already belong to a newer loop: then its claim tag differs */
    Loop l = {p->fn, p->arg, p->count, p->grain, (uint64_t)seen & 0xffffffffu};
    run_chunks(p, &l);
  }
  return NULL;
}

tdsl_pool *tdsl_pool_new(int nthreads) {
  tdsl_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = nthreads < 1 ? 1 : nthreads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->fin, NULL);
  p->w = calloc((size_t)p->n, sizeof *p->w);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, WORKER_STACK);
  int made = 0;
  for (int i = 1; p->w && i < p->n; i++, made++) {
    p->w[i] = (Worker){.p = p};
    if (pthread_create(&p->w[i].th, &at, worker, &p->w[i])) break;
  }
  pthread_attr_destroy(&at);
  if (!p->w || made != p->n - 1) {
    p->n = made + 1; /* join what was started */
    tdsl_pool_free(p);
    return NULL;
  }
  return p;
}

static void wake_all(tdsl_pool *p) {
  pthread_mutex_lock(&p->mu);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
}

void tdsl_pool_free(tdsl_pool *p) {
  if (!p) return;
  atomic_store(&p->quit, true);
  wake_all(p);
  for (int i = 1; p->w && i < p->n; i++) pthread_join(p->w[i].th, NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->fin);
  free(p->w);
  free(p);
}

int tdsl_pool_threads(const tdsl_pool *p) { return p ? p->n : 1; }

void tdsl_pool_run(tdsl_pool *p, tdsl_par_fn fn, void *arg, long n) {
  if (!p || p->n == 1 || n < 2 || n > INT32_MAX) {
    if (n > 0) fn(arg, 0, n);
    return;
  }
  /* The previous loop is done: no thread runs its chunks, a late one can claim none
   * of this one (the claim's tag changes first). */
  Loop l = {fn, arg, n, n / (4 * p->n) > 0 ? n / (4 * p->n) : 1, (atomic_load(&p->gen) + 1) & 0xffffffffu};
  atomic_store(&p->claim, l.tag << 32);
  atomic_store(&p->done, 0);
  atomic_store(&p->fn, fn);
  atomic_store(&p->arg, arg);
  atomic_store(&p->count, n);
  atomic_store(&p->grain, l.grain);
  atomic_fetch_add(&p->gen, 1); /* publishes the fields */
  if (atomic_load(&p->sleepers)) wake_all(p);
  run_chunks(p, &l);
  if (spin_until(p, all_done, n)) return;
  pthread_mutex_lock(&p->mu);
  while (!all_done(p, n)) pthread_cond_wait(&p->fin, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
