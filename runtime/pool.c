/* pool.c: a fixed pool of pthreads for the parallel loops of compiled models (pool.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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
  int id;   /* its home range (the caller's is 0) */
  pthread_t th;
} Worker;

/* One thread's range of the current loop, in units: generation (high 32 bits), then the
 * first and the end unit (16 bits each). Its owner takes chunks from the front, the
 * others steal chunks from the back; a compare-and-swap on the whole word orders them,
 * and a thread that saw an older loop can take nothing of a newer one (the generation
 * differs). One cache line each, so owners do not contend. */
typedef struct Range {
  _Alignas(64) atomic_ullong r;
} Range;

/* Units of a loop: at most this many, so a range fits 16 bits (a longer loop's unit is
 * several iterations). */
enum { MAX_UNITS = 65535 };

/* A loop is published as fn, arg, count, unit and grain plus every thread's range,
 * then gen is bumped. Thread t's home range is the t-th of T equal parts: at the same
 * extent, consecutive loops give each thread the same iterations, so what one loop
 * wrote (a kernel's rows) is still in that core's cache when the next loop reads it,
 * and a kernel packs its operands once per thread and not once per small chunk. A
 * thread that finished its range steals from the others' (on a busy machine a worker
 * may get no core for milliseconds); the caller returns when every unit is done, not
 * waiting for workers that took none. */
struct tdsl_pool {
  int n;                  /* threads, the caller included */
  Worker *w;              /* n - 1 workers (w[1..n-1]) */
  Range *range;           /* n home ranges */
  pthread_mutex_t mu;     /* sleeping and waking only */
  pthread_cond_t go, fin;
  /* gen is what idle workers spin on, done what every chunk updates: apart, so that
   * the spinning does not take the line from the threads that count */
  _Alignas(64) atomic_ulong gen; /* bumped for every loop */
  _Alignas(64) atomic_long done; /* units of the current loop finished */
  atomic_int sleepers;    /* workers blocked (or about to block) on go */
  atomic_bool quit;
  /* the published loop; atomic because a late worker may read them while the next
   * loop is published (its claims then fail) */
  _Atomic(tdsl_par_fn) fn;
  _Atomic(void *) arg;
  atomic_long count, unit, units, grain;
};

typedef struct Loop {
  tdsl_par_fn fn;
  void *arg;
  long count, unit, units, grain;
  uint64_t tag;
} Loop;

static unsigned long long pack_range(uint64_t tag, long lo, long hi) {
  return tag << 32 | (unsigned long long)lo << 16 | (unsigned long long)hi;
}

/* Takes up to grain units of range t (from the front when t is the caller's own
 * range); false when it holds none of loop l. */
static bool take(tdsl_pool *p, const Loop *l, int t, bool front, long *lo, long *hi) {
  for (;;) {
    unsigned long long c = atomic_load(&p->range[t].r);
    long a = (long)(c >> 16 & 0xffff), b = (long)(c & 0xffff);
    if (c >> 32 != l->tag || a >= b) return false;
    long g = b - a < l->grain ? b - a : l->grain;
    *lo = front ? a : b - g, *hi = front ? a + g : b;
    unsigned long long nc = front ? pack_range(l->tag, a + g, b) : pack_range(l->tag, a, b - g);
    if (atomic_compare_exchange_weak(&p->range[t].r, &c, nc)) return true;
  }
}

static void run_units(tdsl_pool *p, const Loop *l, long lo, long hi) {
  long end = hi * l->unit < l->count ? hi * l->unit : l->count;
  l->fn(l->arg, lo * l->unit, end);
  if (atomic_fetch_add(&p->done, hi - lo) + (hi - lo) == l->units) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->fin);
    pthread_mutex_unlock(&p->mu);
  }
}

/* Thread self's part of loop l: its own range, then what is left of the others'. */
static void run_chunks(tdsl_pool *p, const Loop *l, int self) {
  long lo, hi;
  while (take(p, l, self, true, &lo, &hi)) run_units(p, l, lo, hi);
  for (int k = 1; k < p->n; k++) {
    int t = (self + k) % p->n;
    while (take(p, l, t, false, &lo, &hi)) run_units(p, l, lo, hi);
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
static bool all_done(tdsl_pool *p, long units) { return atomic_load(&p->done) == units; }

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
    Loop l = {p->fn, p->arg, p->count, p->unit, p->units, p->grain, (uint64_t)seen & 0xffffffffu};
    run_chunks(p, &l, w->id);
  }
  return NULL;
}

tdsl_pool *tdsl_pool_new(int nthreads) {
  size_t size = (sizeof(tdsl_pool) + _Alignof(tdsl_pool) - 1) / _Alignof(tdsl_pool) * _Alignof(tdsl_pool);
  tdsl_pool *p = aligned_alloc(_Alignof(tdsl_pool), size); /* its counters on lines of their own */
  if (!p) return NULL;
  memset(p, 0, sizeof *p);
  p->n = nthreads < 1 ? 1 : nthreads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->fin, NULL);
  p->w = calloc((size_t)p->n, sizeof *p->w);
  p->range = aligned_alloc(_Alignof(Range), (size_t)p->n * sizeof(Range));
  for (int i = 0; p->range && i < p->n; i++) atomic_init(&p->range[i].r, 0);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, WORKER_STACK);
  int made = 0;
  for (int i = 1; p->w && p->range && i < p->n; i++, made++) {
    p->w[i] = (Worker){.p = p, .id = i};
    if (pthread_create(&p->w[i].th, &at, worker, &p->w[i])) break;
  }
  pthread_attr_destroy(&at);
  if (!p->w || !p->range || made != p->n - 1) {
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
  free(p->range);
  free(p);
}

void tdsl_pool_forget(tdsl_pool *p) {
  if (!p) return;
  free(p->w);
  free(p->range);
  free(p);
}

int tdsl_pool_threads(const tdsl_pool *p) { return p ? p->n : 1; }

void tdsl_pool_run(tdsl_pool *p, tdsl_par_fn fn, void *arg, long n) {
  if (!p || p->n == 1 || n < 2) {
    if (n > 0) fn(arg, 0, n);
    return;
  }
  long unit = (n + MAX_UNITS - 1) / MAX_UNITS, units = (n + unit - 1) / unit, per = units / (4 * p->n);
  Loop l = {fn, arg, n, unit, units, per > 0 ? per : 1, (atomic_load(&p->gen) + 1) & 0xffffffffu};
  /* The previous loop is done: no thread runs its chunks, and a late one can take none
   * of this one (the ranges' generation changes first). */
  for (int t = 0; t < p->n; t++) atomic_store(&p->range[t].r, pack_range(l.tag, units * t / p->n, units * (t + 1) / p->n));
  atomic_store(&p->done, 0);
  atomic_store(&p->fn, fn);
  atomic_store(&p->arg, arg);
  atomic_store(&p->count, n);
  atomic_store(&p->unit, unit);
  atomic_store(&p->units, units);
  atomic_store(&p->grain, l.grain);
  atomic_fetch_add(&p->gen, 1); /* publishes the fields */
  if (atomic_load(&p->sleepers)) wake_all(p);
  run_chunks(p, &l, 0);
  if (spin_until(p, all_done, units)) return;
  pthread_mutex_lock(&p->mu);
  while (!all_done(p, units)) pthread_cond_wait(&p->fin, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
