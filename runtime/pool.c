/* pool.c: a fixed pool of pthreads for the parallel loops of compiled models (pool.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pool.h"

/* Worker stacks hold the packed operand panels of contraction kernels (up to ~1 MiB). */
enum { WORKER_STACK = 16 << 20 };

typedef struct Worker {
  tdsl_pool *p;
  int index;
  pthread_t th;
} Worker;

struct tdsl_pool {
  int n;               /* threads, the caller included */
  Worker *w;           /* n - 1 workers */
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  unsigned long gen;   /* bumped for every loop; workers run when it changes */
  int pending;         /* workers still running the current loop */
  bool quit;
  tdsl_par_fn fn;
  void *arg;
  long count;
};

static void chunk(tdsl_pool *p, int t, tdsl_par_fn fn, void *arg, long n) {
  long lo = n * t / p->n, hi = n * (t + 1) / p->n;
  if (lo < hi) fn(arg, lo, hi);
}

static void *worker(void *v) {
  Worker *w = v;
  tdsl_pool *p = w->p;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
    if (p->quit) break;
    seen = p->gen;
    tdsl_par_fn fn = p->fn;
    void *arg = p->arg;
    long n = p->count;
    pthread_mutex_unlock(&p->mu);
    chunk(p, w->index, fn, arg, n);
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

tdsl_pool *tdsl_pool_new(int nthreads) {
  tdsl_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = nthreads < 1 ? 1 : nthreads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  p->w = calloc((size_t)p->n, sizeof *p->w);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, WORKER_STACK);
  int made = 0;
  for (int i = 1; p->w && i < p->n; i++, made++) {
    p->w[i] = (Worker){.p = p, .index = i};
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

void tdsl_pool_free(tdsl_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = true;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; p->w && i < p->n; i++) pthread_join(p->w[i].th, NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
  free(p->w);
  free(p);
}

int tdsl_pool_threads(const tdsl_pool *p) { return p ? p->n : 1; }

void tdsl_pool_run(tdsl_pool *p, tdsl_par_fn fn, void *arg, long n) {
  if (!p || p->n == 1 || n < 2) {
    if (n > 0) fn(arg, 0, n);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn, p->arg = arg, p->count = n;
  p->pending = p->n - 1;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  chunk(p, 0, fn, arg, n);
  pthread_mutex_lock(&p->mu);
  while (p->pending) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
