/* Several instances of one model (argv[1], the moons sample): each tdsl_open has its own
 * storage, so initializing one leaves the other alone, and two instances trained at
 * once from two threads end exactly as each trained alone. Prints results for FileCheck. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tdsl.h"

enum { N = 800, STEPS = 160, W1 = 32 };

static float xy[2 * N], cls[N];
static const char *path;

typedef struct Run {
  uint64_t seed;
  tdsl_model *m;
  float w1[W1], loss;
  int rc;
} Run;

static void data(void) {
  uint32_t s = 12345;
  for (int i = 0; i < N; i++) {
    s = s * 1664525u + 1013904223u;
    xy[2 * i] = (float)(s >> 8) / 16777216.0f * 2 - 1;
    s = s * 1664525u + 1013904223u;
    xy[2 * i + 1] = (float)(s >> 8) / 16777216.0f * 2 - 1;
    cls[i] = xy[2 * i] * xy[2 * i + 1] > 0 ? 1 : -1;
  }
}

static void *train(void *arg) {
  Run *r = arg;
  tdsl_model *m = r->m;
  r->rc = -1;
  if (tdsl_init(m, r->seed) || tdsl_write(m, "moons_flat", xy, 2 * N) || tdsl_write(m, "moons_classes", cls, N)) return NULL;
  for (int step = 0; step < STEPS; step++)
    if (tdsl_set_index(m, "batch_n", step % 80) || tdsl_set_index(m, "step_n", step) || tdsl_call(m, "train_step"))
      return NULL;
  if (tdsl_read(m, "scalar_loss", &r->loss, 1) || tdsl_read(m, "w1", r->w1, W1)) return NULL;
  r->rc = 0;
  return NULL;
}

static tdsl_model *open_model(void) {
  char err[512];
  tdsl_model *m = tdsl_open(path, err, sizeof err);
  if (!m) printf("open failed: %s\n", err);
  return m;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  path = argv[1];
  data();
  /* Alone, one after the other. */
  Run alone[2] = {{.seed = 1}, {.seed = 2}};
  for (int i = 0; i < 2; i++) {
    if (!(alone[i].m = open_model())) return 1;
    train(&alone[i]);
    if (alone[i].rc) printf("train failed: %s\n", tdsl_error(alone[i].m));
    tdsl_close(alone[i].m);
  }
  printf("seeds differ %d\n", memcmp(alone[0].w1, alone[1].w1, sizeof alone[0].w1) != 0);

  /* Two open at once: separate, aligned storage; init of one leaves the other. */
  Run both[2] = {{.seed = 1}, {.seed = 2}};
  if (!(both[0].m = open_model()) || !(both[1].m = open_model())) return 1;
  void *i0 = tdsl_instance(both[0].m), *i1 = tdsl_instance(both[1].m);
  printf("instances distinct %d aligned %d\n", i0 != i1, (uintptr_t)i0 % 64 == 0 && (uintptr_t)i1 % 64 == 0);
  float a[W1], b[W1];
  tdsl_init(both[0].m, 1);
  tdsl_read(both[0].m, "w1", a, W1);
  tdsl_init(both[1].m, 2);
  tdsl_set_index(both[1].m, "batch_n", 5);
  tdsl_read(both[0].m, "w1", b, W1);
  long bn = -1;
  tdsl_get_index(both[0].m, "batch_n", &bn);
  printf("init isolated %d index isolated %d\n", !memcmp(a, b, sizeof a), bn == 0);

  /* Trained at once from two threads. */
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, train, &both[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    if (both[i].rc) printf("train failed: %s\n", tdsl_error(both[i].m));
    printf("concurrent %d same as alone %d\n", i,
           !both[i].rc && both[i].loss == alone[i].loss && !memcmp(both[i].w1, alone[i].w1, sizeof both[i].w1));
    tdsl_close(both[i].m);
  }
  return 0;
}
