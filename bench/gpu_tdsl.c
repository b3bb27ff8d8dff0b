/* gpu_tdsl.c: times one routine of a compiled cuda model (make bench-gpu).
 *   usage: gpu_tdsl MODEL.so ROUTINE OUTPUT [SECONDS]   prints "ms N" (per call)
 * Launches are asynchronous: reading OUTPUT (a tensor the routine writes) copies it back
 * and so waits for the device; the timed run is N calls then that read, with N chosen
 * from a first timed call so that the run lasts about SECONDS. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tdsl.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Runs the routine n times and waits for the device; seconds taken, < 0 on error. */
static double run(tdsl_model *m, const char *routine, const char *out, float *buf, long size, long n) {
  double t0 = now();
  for (long i = 0; i < n; i++)
    if (tdsl_call(m, routine)) return -1;
  if (tdsl_read(m, out, buf, size)) return -1;
  return now() - t0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: gpu_tdsl MODEL.so ROUTINE OUTPUT [SECONDS]\n");
    return 2;
  }
  double secs = argc > 4 ? atof(argv[4]) : 1.0;
  char err[512];
  tdsl_model *m = tdsl_open(argv[1], err, sizeof err);
  if (!m) {
    fprintf(stderr, "gpu_tdsl: %s\n", err);
    return 1;
  }
  tdsl_tensor_info ti;
  long size = tdsl_tensor_by_name(m, argv[3], &ti) ? 0 : ti.size;
  float *buf = size > 0 ? malloc(sizeof(float) * (size_t)size) : NULL;
  double t1;
  if (!buf || tdsl_init(m, 1) || run(m, argv[2], argv[3], buf, size, 3) < 0 || (t1 = run(m, argv[2], argv[3], buf, size, 1)) < 0)
    goto fail;
  long n = (long)(secs / (t1 > 1e-6 ? t1 : 1e-6));
  if (n < 3) n = 3;
  if (n > 100000) n = 100000;
  double t = run(m, argv[2], argv[3], buf, size, n);
  if (t < 0) goto fail;
  printf("ms %.4f\ncalls %ld\n", 1e3 * t / (double)n, n);
  free(buf);
  tdsl_close(m);
  return 0;
fail:
  fprintf(stderr, "gpu_tdsl: %s\n", tdsl_error(m));
  free(buf);
  tdsl_close(m);
  return 1;
}
