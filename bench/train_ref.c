/* train_ref.c: the moons MLP training step (bench/train.tdsl) hand-written in C, plain
 * loops compiled with -O3: 2-H-H-1 MLP with ReLU, hinge loss relu(1 - y*out) averaged
 * over the batch, backprop, SGD with weight decay. The reference tdslc is compared with.
 *   usage: train_ref BATCH HIDDEN [SECONDS]   prints "steps/s N" and the last loss */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: train_ref BATCH HIDDEN [SECONDS]\n");
    return 2;
  }
  const int B = atoi(argv[1]), H = atoi(argv[2]);
  const double secs = argc > 3 ? atof(argv[3]) : 1.0;
  const float lr = 0.1f, wd = 0.0001f;
  float *x = malloc(sizeof(float) * B * 2), *y = malloc(sizeof(float) * B);
  float *w1 = malloc(sizeof(float) * H * 2), *b1 = calloc(H, sizeof(float));
  float *w2 = malloc(sizeof(float) * H * H), *b2 = calloc(H, sizeof(float));
  float *w3 = malloc(sizeof(float) * H);
  float *gw1 = malloc(sizeof(float) * H * 2), *gb1 = malloc(sizeof(float) * H);
  float *gw2 = malloc(sizeof(float) * H * H), *gb2 = malloc(sizeof(float) * H);
  float *gw3 = malloc(sizeof(float) * H);
  float *p1 = malloc(sizeof(float) * B * H), *h1 = malloc(sizeof(float) * B * H);
  float *p2 = malloc(sizeof(float) * B * H), *h2 = malloc(sizeof(float) * B * H);
  float *d1 = malloc(sizeof(float) * B * H), *d2 = malloc(sizeof(float) * B * H);
  float *out = malloc(sizeof(float) * B), *dout = malloc(sizeof(float) * B);
  unsigned s = 1;
  for (int i = 0; i < B; i++) {
    x[2 * i] = 2 * frand(&s) - 1;
    x[2 * i + 1] = 2 * frand(&s) - 1;
    y[i] = x[2 * i] * x[2 * i + 1] > 0 ? 1.0f : -1.0f;
  }
  for (int i = 0; i < H * 2; i++) w1[i] = frand(&s) - 0.5f;
  for (int i = 0; i < H * H; i++) w2[i] = (frand(&s) - 0.5f) / 4;
  for (int i = 0; i < H; i++) w3[i] = frand(&s) - 0.5f;
  long steps = 0;
  float loss = 0;
  double t0 = now(), c0 = cpu_now(), t;
  do {
    for (int rep = 0; rep < 16; rep++, steps++) {
      /* forward */
      for (int b = 0; b < B; b++)
        for (int o = 0; o < H; o++) {
          float a = b1[o] + w1[2 * o] * x[2 * b] + w1[2 * o + 1] * x[2 * b + 1];
          p1[b * H + o] = a;
          h1[b * H + o] = a > 0 ? a : 0;
        }
      for (int b = 0; b < B; b++)
        for (int o = 0; o < H; o++) {
          float a = b2[o];
          for (int i = 0; i < H; i++) a += w2[o * H + i] * h1[b * H + i];
          p2[b * H + o] = a;
          h2[b * H + o] = a > 0 ? a : 0;
        }
      loss = 0;
      for (int b = 0; b < B; b++) {
        float a = 0;
        for (int i = 0; i < H; i++) a += w3[i] * h2[b * H + i];
        out[b] = a;
        float m = 1 - y[b] * a;
        loss += m > 0 ? m : 0;
        dout[b] = m > 0 ? -y[b] / B : 0;
      }
      loss /= B;
      /* backward */
      memset(gw3, 0, sizeof(float) * H);
      for (int b = 0; b < B; b++)
        for (int i = 0; i < H; i++) {
          gw3[i] += dout[b] * h2[b * H + i];
          d2[b * H + i] = p2[b * H + i] > 0 ? dout[b] * w3[i] : 0;
        }
      memset(gw2, 0, sizeof(float) * H * H);
      memset(gb2, 0, sizeof(float) * H);
      memset(d1, 0, sizeof(float) * B * H);
      for (int b = 0; b < B; b++)
        for (int o = 0; o < H; o++) {
          float g = d2[b * H + o];
          gb2[o] += g;
          for (int i = 0; i < H; i++) {
            gw2[o * H + i] += g * h1[b * H + i];
            d1[b * H + i] += g * w2[o * H + i];
          }
        }
      memset(gw1, 0, sizeof(float) * H * 2);
      memset(gb1, 0, sizeof(float) * H);
      for (int b = 0; b < B; b++)
        for (int o = 0; o < H; o++) {
          float g = p1[b * H + o] > 0 ? d1[b * H + o] : 0;
          gb1[o] += g;
          gw1[2 * o] += g * x[2 * b];
          gw1[2 * o + 1] += g * x[2 * b + 1];
        }
      /* SGD with weight decay */
#define SGD(p, g, n) for (int i = 0; i < (n); i++) p[i] -= lr * (g[i] + wd * p[i])
      SGD(w1, gw1, H * 2);
      SGD(b1, gb1, H);
      SGD(w2, gw2, H * H);
      SGD(b2, gb2, H);
      SGD(w3, gw3, H);
    }
    t = now() - t0;
  } while (t < secs);
  printf("steps/s %.1f\ncpu steps/s %.1f\nloss %.6f\n", steps / t, steps / (cpu_now() - c0), loss);
  return 0;
}
