/* train_tdsl.c: times the train_step routine of a compiled bench/train_b*_h*.tdsl model
 * through the tdsl.h runtime, on the same data as train_ref.c.
 *   usage: train_tdsl MODEL.so BATCH [SECONDS]   prints "steps/s N" and the last loss */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tdsl.h"
#include "bench_util.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: train_tdsl MODEL.so BATCH [SECONDS]\n");
    return 2;
  }
  const int B = atoi(argv[2]);
  const double secs = argc > 3 ? atof(argv[3]) : 1.0;
  char err[512];
  tdsl_model *m = tdsl_open(argv[1], err, sizeof err);
  if (!m) {
    fprintf(stderr, "train_tdsl: %s\n", err);
    return 1;
  }
  float *x = malloc(sizeof(float) * B * 2), *y = malloc(sizeof(float) * B), loss = 0;
  unsigned s = 1;
  for (int i = 0; i < B; i++) {
    x[2 * i] = 2 * frand(&s) - 1;
    x[2 * i + 1] = 2 * frand(&s) - 1;
    y[i] = x[2 * i] * x[2 * i + 1] > 0 ? 1.0f : -1.0f;
  }
  if (tdsl_init(m, 1) || tdsl_write(m, "xs", x, 2L * B) || tdsl_write(m, "ys", y, B)) goto fail;
  int r = tdsl_find_routine(m, "train_step");
  if (r < 0) goto fail;
  for (int i = 0; i < 3; i++)
    if (tdsl_call(m, "train_step")) goto fail;
  long steps = 0;
  double t0 = now(), c0 = cpu_now(), t;
  do {
    for (int rep = 0; rep < 16; rep++, steps++)
      if (tdsl_call(m, "train_step")) goto fail;
    t = now() - t0;
  } while (t < secs);
  /* A cuda model's launches are asynchronous: the read waits for the device. */
  if (tdsl_read(m, "scalar_loss", &loss, 1)) goto fail;
  t = now() - t0;
  printf("steps/s %.1f\ncpu steps/s %.1f\nloss %.6f\n", steps / t, steps / (cpu_now() - c0), loss);
  tdsl_close(m);
  return 0;
fail:
  fprintf(stderr, "train_tdsl: %s\n", tdsl_error(m));
  tdsl_close(m);
  return 1;
}
