/* The runtime's thread pool (runtime/pool.c): every iteration of [0, n) runs exactly
 * once, for thread counts 1 to 4 and sizes around the chunk grain, in loops issued
 * back to back (workers still spinning) and after a pause (workers asleep). */
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
    tdsl_pool_free(p);
  }
  tdsl_pool_free(NULL);
  return tk_exit("test_pool");
}
