/* bench_util.h: what the benchmark programs share: a monotonic clock, and the data
 * generator that gives train_ref.c and train_tdsl.c the same inputs. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <time.h>

static inline double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* CPU time of the process (all its threads): on a loaded machine it stays near what a
 * quiet one would show while the wall clock does not. */
static inline double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* A linear congruential generator: uniform [0, 1) floats, the same on every machine. */
static inline float frand(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)(*s >> 8) / 16777216.0f;
}

#endif
