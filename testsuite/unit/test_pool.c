/* The runtime's thread pool (runtime/pool.c): every iteration of [0, n) runs exactly
 * once, for thread counts 1 to 4 and sizes around the chunk grain, in loops issued
 * back to back (workers still spinning) and after a pause (workers asleep), for loops
 * longer than a range holds (several iterations per unit); a worker that stalls in its
 * first chunk leaves the rest of its range to the others. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"
#include "testkit.h"

typedef struct Hits {
  atomic_int *hit;
  atomic_int calls;
  long n;
} Hits;

static void mark(void *arg, long lo, long hi) {
  Hits *h = arg;
  atomic_fetch_add(&h->calls, 1);
  for (long i = lo; i < hi; i++)
    if (i >= 0 && i < h->n) atomic_fetch_add(&h->hit[i], 1);
}

static bool once_each(tdsl_pool *p, long n) {
  Hits h = {.hit = calloc((size_t)n + 1, sizeof(atomic_int)), .n = n};
  tdsl_pool_run(p, mark, &h, n);
  bool ok = h.hit != NULL;
  for (long i = 0; ok && i < n; i++) ok = atomic_load(&h.hit[i]) == 1;
  free(h.hit);
  return ok && (n == 0 || atomic_load(&h.calls) >= 1);
}

static void pause_ms(long ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* The first chunk a worker (not the caller) runs stalls 200 ms; iterations run by
 * workers are counted. */
typedef struct Stall {
  Hits h;
  pthread_t caller;
  atomic_int stalled;
  atomic_long by_workers;
} Stall;

static void stall(void *arg, long lo, long hi) {
  Stall *s = arg;
  if (!pthread_equal(pthread_self(), s->caller)) {
    atomic_fetch_add(&s->by_workers, hi - lo);
    if (!atomic_exchange(&s->stalled, 1)) pause_ms(200);
  }
  for (volatile long k = 0; k < 1000L * (hi - lo); k++) /* ~1 us an iteration: the worker gets there */
    ;
  mark(&s->h, lo, hi);
}

/* On 2 threads the caller finishes its half, then steals what the stalled worker did
 * not take: the worker runs one chunk (a quarter of its half), not its whole range.
 * (A worker that arrives late runs nothing, which passes too.) */
static void check_stealing(void) {
  enum { N = 4000 };
  tdsl_pool *p = tdsl_pool_new(2);
  CHECK(p != NULL);
  if (!p) return;
  Stall s = {.h = {.hit = calloc(N, sizeof(atomic_int)), .n = N}, .caller = pthread_self()};
  tdsl_pool_run(p, stall, &s, N);
  bool once = s.h.hit != NULL;
  for (long i = 0; once && i < N; i++) once = atomic_load(&s.h.hit[i]) == 1;
  CHECK(once, "stealing: an iteration lost or repeated");
  CHECK(atomic_load(&s.by_workers) <= N / 8, "the stalled worker ran %ld of %d iterations", atomic_load(&s.by_workers), N);
  free(s.h.hit);
  tdsl_pool_free(p);
}

int main(void) {
  static const long sizes[] = {0, 1, 2, 3, 7, 8, 9, 17, 63, 65, 1000, 4097};
  for (int t = 1; t <= 4; t++) {
    tdsl_pool *p = tdsl_pool_new(t);
    CHECK(p != NULL, "%d threads", t);
    if (!p) continue;
    CHECK(tdsl_pool_threads(p) == t);
    for (int round = 0; round < 3; round++) {
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        CHECK(once_each(p, sizes[s]), "%d threads, n = %ld, round %d", t, sizes[s], round);
      pause_ms(2); /* past the spin: the next loop wakes sleeping workers */
    }
    for (int k = 0; k < 2000; k++) /* back to back */
      if (!once_each(p, 1 + k % 37)) {
        tk_fail("%d threads: loop %d lost or repeated an iteration", t, k);
        break;
      }
    CHECK(once_each(p, 200003), "%d threads: a loop of several iterations per unit", t);
    tdsl_pool_free(p);
  }
  check_stealing();
  tdsl_pool_free(NULL);
  return tk_exit("test_pool");
}
