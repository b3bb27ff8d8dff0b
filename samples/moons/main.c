/* moons: trains the MLP of moons.tdsl on a generated two-half-moons data set through
 * the tdsl.h runtime, prints the loss per epoch, the training accuracy and the learned
 * decision boundary as a terminal plot.
 *   usage: moons [MODEL.so] [--seed N] [--epochs N]
 * Exit status 0 when training succeeded (100% accuracy or final loss < 0.1), else 3. */
#define _DEFAULT_SOURCE /* M_PI */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdsl.h"

enum { N_BATCHES = 80, BATCH = 10, N = N_BATCHES * BATCH };

/* xorshift64*: a small seeded generator, so the data set is reproducible. */
static double rnd(unsigned long long *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double gauss(unsigned long long *s) {
  double u = rnd(s) + 1e-12, v = rnd(s);
  return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* Upper moon (class +1) centred at the origin, lower moon (class -1) shifted by
 * (1, 0.5) and flipped, as scikit-learn's make_moons; points interleaved. */
static void make_moons(unsigned long long seed, double noise, float *xy, float *cls) {
  unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int i = 0; i < N; i++) {
    double t = M_PI * rnd(&s);
    bool upper = i % 2 == 0;
    double x = upper ? cos(t) : 1.0 - cos(t);
    double y = upper ? sin(t) : 0.5 - sin(t);
    xy[2 * i] = (float)(x + noise * gauss(&s));
    xy[2 * i + 1] = (float)(y + noise * gauss(&s));
    cls[i] = upper ? 1.0f : -1.0f;
  }
}

static int check(tdsl_model *m, int rc) {
  if (rc) {
    fprintf(stderr, "moons: %s\n", tdsl_error(m));
    exit(1);
  }
  return rc;
}

static float predict(tdsl_model *m, float x, float y) {
  float p[2] = {x, y}, r;
  check(m, tdsl_write(m, "point", p, 2));
  check(m, tdsl_call(m, "infer"));
  check(m, tdsl_read(m, "mlp_result", &r, 1));
  return r;
}

static void plot(tdsl_model *m, const float *xy, const float *cls) {
  enum { W = 64, H = 24 };
  const double x0 = -1.6, x1 = 2.6, y0 = -1.1, y1 = 1.6;
  char grid[H][W + 1];
  for (int r = 0; r < H; r++) {
    for (int c = 0; c < W; c++) {
      double x = x0 + (x1 - x0) * (c + 0.5) / W, y = y1 - (y1 - y0) * (r + 0.5) / H;
      grid[r][c] = predict(m, (float)x, (float)y) >= 0 ? '.' : ' ';
    }
    grid[r][W] = 0;
  }
  for (int i = 0; i < N; i += 2 * 2) { /* every other point of each class keeps it readable */
    for (int k = 0; k < 2; k++) {
      int j = i + k;
      int c = (int)((xy[2 * j] - x0) / (x1 - x0) * W), r = (int)((y1 - xy[2 * j + 1]) / (y1 - y0) * H);
      if (c >= 0 && c < W && r >= 0 && r < H) grid[r][c] = cls[j] > 0 ? 'o' : 'x';
    }
  }
  printf("decision boundary ('.' = predicted class +1; o = class +1, x = class -1):\n");
  printf("+");
  for (int c = 0; c < W; c++) putchar('-');
  printf("+\n");
  for (int r = 0; r < H; r++) printf("|%s|\n", grid[r]);
  printf("+");
  for (int c = 0; c < W; c++) putchar('-');
  printf("+\n");
}

int main(int argc, char **argv) {
  const char *path = "./moons.so";
  unsigned long long seed = 1;
  int epochs = 60;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
    else path = argv[i];
  }
  char err[512];
  tdsl_model *m = tdsl_open(path, err, sizeof err);
  if (!m) {
    fprintf(stderr, "moons: %s\n", err);
    return 1;
  }
  static float xy[2 * N], cls[N];
  make_moons(seed, 0.1, xy, cls);
  check(m, tdsl_init(m, seed));
  check(m, tdsl_write(m, "moons_flat", xy, 2 * N));
  check(m, tdsl_write(m, "moons_classes", cls, N));
  long step = 0;
  double loss = 0;
  for (int e = 0; e < epochs; e++) {
    loss = 0;
    for (int b = 0; b < N_BATCHES; b++, step++) {
      check(m, tdsl_set_index(m, "batch_n", b));
      check(m, tdsl_set_index(m, "step_n", step));
      check(m, tdsl_call(m, "train_step"));
      float l;
      check(m, tdsl_read(m, "scalar_loss", &l, 1));
      loss += l;
    }
    loss /= N_BATCHES;
    if (e % 5 == 0 || e == epochs - 1) printf("epoch %3d  loss %.4f\n", e, loss);
    fflush(stdout);
  }
  int correct = 0;
  for (int i = 0; i < N; i++) correct += (predict(m, xy[2 * i], xy[2 * i + 1]) >= 0) == (cls[i] > 0);
  printf("training accuracy: %d/%d (%.1f%%)\n", correct, N, 100.0 * correct / N);
  plot(m, xy, cls);
  tdsl_close(m);
  /* Success: every training point classified, or the hinge loss below 0.1 (the noisy
   * data set can put a point or two on the wrong side). */
  return correct == N || loss < 0.1 ? 0 : 3;
}
