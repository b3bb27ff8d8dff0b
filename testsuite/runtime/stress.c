/* The runtime under threads (tdsl.h, "Threads"): one model used by several threads at
 * once through every kind of entry point, closed while in use, forked after use, opened
 * twice. Run under ThreadSanitizer and ASan+UBSan by `make check-runtime-threads`.
 *
 *   stress MODEL.so DIR storm|close|fork|twice|direct|many
 *
 * Each part prints "PART ok" or a FAIL line and exits non-zero. The model is
 * testsuite/runtime/stress.tdsl: a dynamic batch, a training step with parallel loops;
 * also linked in statically (stress.o and its --emit-header header stress.h) for the
 * direct part. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tdsl.h"

enum { IN = 16, H = 24, NTHREADS = 6, MAXB = 130 };

static const char *path, *dir;
static atomic_int failures;

#define FAIL(...)                                                                                                      \
  do {                                                                                                                 \
    printf("FAIL: " __VA_ARGS__);                                                                                      \
    printf("\n");                                                                                                      \
    atomic_fetch_add(&failures, 1);                                                                                    \
  } while (0)

static tdsl_model *open_model(void) {
  char err[512];
  tdsl_model *m = tdsl_open(path, err, sizeof err);
  if (!m) FAIL("open: %s", err);
  return m;
}

static float xs[MAXB * IN];

/* The loss after a fixed sequence from seed 7 at batch b: what every model that was not
 * corrupted computes. */
static int reference(tdsl_model *m, int b, float *loss) {
  long dims[2] = {b, IN};
  if (tdsl_set_num_threads(m, 2) || tdsl_init(m, 7) || tdsl_write_shaped(m, "x", xs, 2, dims)) return -1;
  for (int k = 0; k < 3; k++)
    if (tdsl_call(m, "step")) return -1;
  return tdsl_read(m, "loss", loss, 1);
}

static uint32_t next(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

typedef struct Worker {
  tdsl_model *m;
  int id, iters;
} Worker;

/* A failure this thread caused is reported to this thread: tdsl_error must give its own
 * message even while the other threads fail with theirs. */
static void own_error(tdsl_model *m, int id) {
  char name[32], want[64];
  snprintf(name, sizeof name, "nosuch%d", id);
  snprintf(want, sizeof want, "no tensor named 'nosuch%d'", id);
  float v;
  if (tdsl_read(m, name, &v, 1) != -1) FAIL("read of %s succeeded", name);
  sched_yield();
  const char *e = tdsl_error(m);
  if (strcmp(e, want)) FAIL("thread %d: tdsl_error '%s', not '%s'", id, e, want);
}

/* Random entry points on one shared model. Every call either succeeds or fails with a
 * message; which depends on the other threads (a dimension another thread changed). */
static void *storm(void *arg) {
  Worker *w = arg;
  tdsl_model *m = w->m;
  uint32_t s = 1234u + (uint32_t)w->id;
  static const int batches[] = {1, 3, 64, 130};
  float buf[IN * H];
  char ck[256];
  snprintf(ck, sizeof ck, "%s/ck%d.safetensors", dir, w->id);
  for (int it = 0; it < w->iters; it++) {
    int op = (int)(next(&s) >> 8) % 14, rc = 0;
    long b = batches[(next(&s) >> 8) % 4], dims[2] = {b, IN}, v;
    tdsl_tensor_info ti;
    switch (op) {
    case 0: case 1: case 2: rc = tdsl_call(m, "step"); break;
    case 3: rc = tdsl_write_shaped(m, "x", xs, 2, dims); break;
    case 4: rc = tdsl_set_dim(m, "batch", b); break;
    case 5: rc = tdsl_read(m, "w1", buf, IN * H); break;
    case 6: rc = tdsl_write(m, "b1", buf, H); break;
    case 7:
      rc = tdsl_tensor(m, (int)(next(&s) >> 8) % tdsl_num_tensors(m), &ti);
      if (!rc && (!ti.name || ti.rank < 0)) FAIL("tensor info");
      break;
    case 8: rc = tdsl_save(m, ck, TDSL_SAVE_ALL); break;
    case 9: rc = tdsl_load(m, ck); break; /* may fail: no file yet, or another batch */
    case 10: rc = tdsl_set_num_threads(m, 1 + (int)(next(&s) >> 8) % 3); break;
    case 11:
      rc = tdsl_get_dim(m, "batch", &v);
      if (!rc && v != -1 && v != 1 && v != 3 && v != 64 && v != 130) FAIL("batch %ld", v);
      break;
    case 12: own_error(m, w->id); break;
    case 13: rc = tdsl_init(m, next(&s)); break;
    }
    if (rc && !*tdsl_error(m)) FAIL("op %d failed without a message", op);
    if (rc && !strcmp(tdsl_error(m), "not an open model")) FAIL("op %d: model closed", op);
  }
  return NULL;
}

static int part_storm(void) {
  tdsl_model *m = open_model(), *fresh = open_model();
  if (!m || !fresh) return 1;
  pthread_t th[NTHREADS];
  Worker w[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    w[i] = (Worker){m, i, 120};
    pthread_create(&th[i], NULL, storm, &w[i]);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  /* the runtime's own state survived: the model computes what a fresh one does */
  float a, b;
  if (reference(m, 64, &a) || reference(fresh, 64, &b)) FAIL("reference: %s / %s", tdsl_error(m), tdsl_error(fresh));
  else if (a != b) FAIL("after the storm the loss is %g, a fresh model's %g", a, b);
  tdsl_close(m);
  tdsl_close(fresh);
  return 0;
}

/* Threads keep calling while the main thread closes the model: each call either runs on
 * the open model or is refused as "not an open model"; none reads freed memory, and the
 * close waits for the calls inside. */
static atomic_int started;
static void *caller(void *arg) {
  Worker *w = arg;
  float buf[IN * H];
  atomic_fetch_add(&started, 1);
  for (int it = 0; it < w->iters; it++) {
    int rc = (it & 1) ? tdsl_call(w->m, "step") : tdsl_read(w->m, "w1", buf, IN * H);
    if (rc && !strcmp(tdsl_error(w->m), "not an open model")) return NULL; /* closed: done */
    if (rc) FAIL("call on the open model: %s", tdsl_error(w->m));
  }
  return NULL;
}

static int part_close(void) {
  for (int round = 0; round < 3; round++) {
    tdsl_model *m = open_model();
    long dims[2] = {64, IN};
    if (!m || tdsl_init(m, 1) || tdsl_write_shaped(m, "x", xs, 2, dims)) return 1;
    pthread_t th[4];
    Worker w[4];
    atomic_store(&started, 0);
    for (int i = 0; i < 4; i++) {
      w[i] = (Worker){m, i, 1 << 30};
      pthread_create(&th[i], NULL, caller, &w[i]);
    }
    while (atomic_load(&started) < 4) sched_yield();
    usleep(20000 * (round + 1));
    tdsl_close(m);
    tdsl_close(m); /* a second close is refused, not a double free */
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    if (tdsl_call(m, "step") != -1 || strcmp(tdsl_error(m), "not an open model")) FAIL("call after close");
  }
  return 0;
}

/* fork after the pool's threads started, and while another thread runs calls: the child
 * has neither, and its model still works (a new pool) and closes (no join of threads it
 * does not have). */
static void *busy(void *arg) {
  Worker *w = arg;
  for (int it = 0; it < w->iters; it++)
    if (tdsl_call(w->m, "step")) FAIL("busy call: %s", tdsl_error(w->m));
  return NULL;
}

static int part_fork(void) {
  tdsl_model *m = open_model(), *other = open_model();
  float a, b;
  if (!m || !other || reference(m, 64, &a)) return 1;
  if (tdsl_set_num_threads(other, 3) || reference(other, 130, &b)) return 1;
  pthread_t th;
  Worker w = {other, 0, 200};
  pthread_create(&th, NULL, busy, &w);
  for (int k = 0; k < 4; k++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(20); /* a hang in the child fails the test instead of blocking it */
      float c;
      int bad = reference(m, 64, &c) || c != a;
      bad |= tdsl_set_num_threads(other, 2) || tdsl_call(other, "step");
      tdsl_close(m);
      tdsl_close(other);
      _exit(bad);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
      FAIL("forked child %d: status %d", k, pid < 0 ? -1 : st);
  }
  pthread_join(th, NULL);
  tdsl_close(m);
  tdsl_close(other);
  return 0;
}

/* One model file opened twice: two instances, each with its own pool, trained at once
 * in two threads while a third changes their thread counts; each ends as alone. */
typedef struct Twin {
  tdsl_model *m;
  float loss;
  int rc;
} Twin;
static atomic_int twins_done;
static void *twin(void *arg) {
  Twin *t = arg;
  t->rc = reference(t->m, 130, &t->loss);
  for (int k = 0; k < 20 && !t->rc; k++) t->rc = tdsl_call(t->m, "step");
  if (!t->rc) t->rc = tdsl_read(t->m, "loss", &t->loss, 1);
  atomic_fetch_add(&twins_done, 1);
  return NULL;
}
static void *thread_changer(void *arg) {
  Twin *t = arg;
  for (int k = 0; atomic_load(&twins_done) < 2; k++) {
    if (tdsl_set_num_threads(t[k & 1].m, 1 + k % 3)) FAIL("set_num_threads: %s", tdsl_error(t[k & 1].m));
    usleep(200);
  }
  return NULL;
}

static int part_twice(void) {
  Twin alone = {open_model(), 0, 0}, t[2] = {{open_model(), 0, 0}, {open_model(), 0, 0}};
  if (!alone.m || !t[0].m || !t[1].m) return 1;
  twin(&alone);
  atomic_store(&twins_done, 0);
  pthread_t th[3];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, twin, &t[i]);
  pthread_create(&th[2], NULL, thread_changer, t);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++)
    if (t[i].rc || alone.rc || t[i].loss != alone.loss) FAIL("instance %d: rc %d loss %g, alone %g", i, t[i].rc, t[i].loss, alone.loss);
  tdsl_close(alone.m);
  tdsl_close(t[0].m);
  tdsl_close(t[1].m);
  return 0;
}

/* A host that runs the model's code itself (--emit-header: the routine on
 * tdsl_instance(m), not through tdsl_call) while another thread changes the thread
 * count: the model's parallel loops reach the runtime's pool through the instance, and
 * the pool must not be replaced under a loop running on it. */
#include "stress.h"
static atomic_int direct_done;
static void *direct_steps(void *arg) {
  tdsl_model *m = arg;
  void *inst = tdsl_instance(m);
  for (int k = 0; k < 200; k++) stress_step(inst);
  atomic_store(&direct_done, 1);
  return NULL;
}

static int part_direct(void) {
  char err[512];
  tdsl_model *m = tdsl_open_resolved(stress_resolve, NULL, err, sizeof err);
  long dims[2] = {64, IN};
  if (!m || tdsl_init(m, 3) || tdsl_write_shaped(m, "x", xs, 2, dims)) {
    FAIL("direct open: %s", m ? tdsl_error(m) : err);
    return 1;
  }
  pthread_t th;
  pthread_create(&th, NULL, direct_steps, m);
  for (int k = 0; !atomic_load(&direct_done); k++)
    if (tdsl_set_num_threads(m, 1 + k % 3)) FAIL("set_num_threads: %s", tdsl_error(m));
  pthread_join(th, NULL);
  tdsl_close(m);
  return 0;
}

/* Thousands of open models (the registry of open models is a hash set): each is found,
 * a closed one is refused while the others work, in any order of closing. */
static int part_many(void) {
  enum { N = 3000 };
  static tdsl_model *ms[N];
  static char closed[N];
  for (int i = 0; i < N; i++)
    if (!(ms[i] = open_model())) return 1;
  uint32_t s = 5;
  for (int round = 0; round < 4; round++) {
    for (int k = 0; k < N / 4; k++) { /* close a quarter, chosen at random */
      int i = (int)(next(&s) >> 8) % N;
      if (!closed[i]) tdsl_close(ms[i]);
      closed[i] = 1;
    }
    for (int i = 0; i < N; i++) {
      long b = -1;
      int rc = tdsl_get_dim(ms[i], "batch", &b);
      if (closed[i] ? rc != -1 || strcmp(tdsl_error(ms[i]), "not an open model") : rc || b != -1)
        FAIL("model %d (%s): rc %d", i, closed[i] ? "closed" : "open", rc);
    }
  }
  for (int i = 0; i < N; i++)
    if (!closed[i]) tdsl_close(ms[i]);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  path = argv[1];
  dir = argv[2];
  setvbuf(stdout, NULL, _IONBF, 0);
  uint32_t s = 99;
  for (int i = 0; i < MAXB * IN; i++) xs[i] = (float)(next(&s) >> 8) / 16777216.0f - 0.5f;
  const char *part = argv[3];
  int rc = !strcmp(part, "storm") ? part_storm()
         : !strcmp(part, "close") ? part_close()
         : !strcmp(part, "fork")  ? part_fork()
         : !strcmp(part, "twice") ? part_twice()
         : !strcmp(part, "direct") ? part_direct()
         : !strcmp(part, "many")   ? part_many()
                                  : 2;
  if (rc || atomic_load(&failures)) {
    printf("%s FAILED\n", part);
    return 1;
  }
  printf("%s ok\n", part);
  return 0;
}
