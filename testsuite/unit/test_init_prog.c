/* test_init_prog.c: the runtime's init programs (`init ID expr STREAM NOPS OP...` in the
 * model metadata, runtime/tdslrt.c): values against hand-computed ones, every
 * primitive of the compiler against its op_eval, independence
 * of the random sub-streams, and rejection of every malformed program (a model whose
 * metadata does not validate does not open). The model is faked through a resolver. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "testkit.h"
#include "tdsl.h"

enum { N = 4096, OFF0 = 640, OFF1 = OFF0 + 4 * N, INST = OFF1 + 8 * N };
/* The runtime allocates the instance; the buffers are at the offsets the `at` lines say. */
static tdsl_model *cur;
#define buf0 ((float *)((char *)tdsl_instance(cur) + OFF0))
#define buf1 ((double *)((char *)tdsl_instance(cur) + OFF1))
static const char *meta_text;

static const char *meta(void) { return meta_text; }

static void *resolve(void *h, const char *sym) {
  if (!strcmp(sym, "tdsl_model_meta")) return (void *)meta;
  return NULL;
}

/* A model of one f32 buffer of n cells (and one f64 of n) with the given init lines. */
static tdsl_model *model(const char *init0, const char *init1, int n, char *err) {
  static char text[4096];
  snprintf(text, sizeof text,
           "tdsl 3\nmodel t %d\nbuf 0 a f32 %d 0 1 0 %d -\nat 0 %d\n%s\nbuf 1 b f64 %d 0 1 0 %d -\nat 1 %d\n%s\n", INST,
           n, n, OFF0, init0, n, n, OFF1, init1);
  meta_text = text;
  return cur = tdsl_open_resolved(resolve, NULL, err, 256);
}

static void test_values(void) {
  char err[256];
  tdsl_model *m = model("init 0 expr 0 6 range const 0.5 mul values 2 1 3 sub neg",
                        "init 1 expr 1 7 range const 2 pow sqrt const 1 max exp", 5, err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  CHECK(tdsl_init(m, 1) == 0, "init");
  for (int i = 0; i < 5; i++) {
    double want0 = -(i * 0.5 - (i % 2 ? 3 : 1)), want1 = exp(fmax(i, 1));
    CHECK(buf0[i] == (float)want0, "cell %d: %g want %g", i, buf0[i], want0);
    CHECK(fabs(buf1[i] - want1) <= 1e-12 * want1, "cell %d: %g want %g", i, buf1[i], want1);
  }
  tdsl_close(m);
}

/* uniform and normal leaves: the first uniform leaf is the plain uniform stream; two
 * leaves differ; statistics of the normal one. */
static void test_random(void) {
  char err[256];
  tdsl_model *m = model("init 0 uniform 7", "init 1 expr 7 3 uniform uniform sub", N, err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  tdsl_init(m, 42);
  static float plain[N];
  memcpy(plain, buf0, sizeof plain);
  double var = 0;
  for (int i = 0; i < N; i++) var += buf1[i] * buf1[i];
  CHECK(fabs(var / N * 6 - 1) < 0.1, "u - u' has variance %g, want 1/6", var / N);
  tdsl_close(m);
  m = model("init 0 expr 7 3 uniform const 0 add", "init 1 expr 7 1 normal", N, err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  tdsl_init(m, 42);
  CHECK(!memcmp(plain, buf0, sizeof plain), "the first uniform leaf is the plain stream");
  double s = 0, s2 = 0;
  int in1 = 0;
  for (int i = 0; i < N; i++) s += buf1[i], s2 += buf1[i] * buf1[i], in1 += fabs(buf1[i]) < 1;
  CHECK(fabs(s / N) < 0.07 && fabs(s2 / N - 1) < 0.07, "normal mean %g var %g", s / N, s2 / N);
  CHECK(fabs((double)in1 / N - 0.6827) < 0.03, "P(|z| < 1) = %g", (double)in1 / N);
  tdsl_close(m);
}

static void test_rejected(void) {
  static const char *bad[] = {
    "init 0 expr 0 0",                       /* empty */
    "init 0 expr 0 -3 range",                /* negative count */
    "init 0 expr 0 2 range",                 /* fewer steps than announced */
    "init 0 expr 0 1 range range",           /* more */
    "init 0 expr 0 1 add",                   /* stack underflow */
    "init 0 expr 0 2 range cbrt",            /* unknown step */
    "init 0 expr 0 3 range range where",     /* a ternary step over two values */
    "init 0 expr 0 2 range range",           /* two values left */
    "init 0 expr 0 1 const",                 /* const without a value */
    "init 0 expr 0 1 const 1x",              /* not a number */
    "init 0 expr 0 1 values 0",              /* no values */
    "init 0 expr 0 1 values 3 1 2",          /* too few values */
    "init 0 expr 0 99999999 range",          /* too long */
    "init 0 expr 0 1 values 333333333 1",    /* a count the line cannot hold (allocated 2.6 GB first) */
  };
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tdsl_model *m = model(bad[i], "", 3, err);
    CHECK(m == NULL, "\"%s\" accepted", bad[i]);
    if (m) tdsl_close(m);
    else CHECK(strstr(err, "invalid init program") != NULL, "\"%s\": %s", bad[i], err);
  }
  /* 65 values on the stack: too deep */
  static char deep[2048];
  int n = snprintf(deep, sizeof deep, "init 0 expr 0 129");
  for (int i = 0; i < 65; i++) n += snprintf(deep + n, sizeof deep - n, " range");
  for (int i = 0; i < 64; i++) n += snprintf(deep + n, sizeof deep - n, " add");
  tdsl_model *m = model(deep, "", 3, err);
  CHECK(m == NULL, "a stack of 65 accepted");
  if (m) tdsl_close(m);
}

/* An initializer may use any primitive (src/eval_init.c), so the runtime must know each
 * by the compiler's name and compute what op_eval computes, NaN and signed zeros
 * included. */
static void test_every_primitive(void) {
  static const double args[][3] = {{0.5, 2, -1}, {-1.5, 0, 3},  {0, -0.25, 7}, {2, 2, 0},
                                   {1, 0.5, 4},  {NAN, 1, 2},  {3, NAN, -0.0}, {-0.0, 5, 1}};
  char err[256], line[512];
  for (int op = 0; op < OP__COUNT; op++)
    for (size_t k = 0; k < sizeof args / sizeof args[0]; k++) {
      const double *a = args[k];
      int n = op_info[op].arity, len = snprintf(line, sizeof line, "init 1 expr 0 %d", n + 1);
      for (int i = 0; i < n; i++) len += snprintf(line + len, sizeof line - len, " const %.17g", a[i]);
      snprintf(line + len, sizeof line - len, " %s", op_info[op].name);
      tdsl_model *m = model("init 0 expr 0 1 range", line, 1, err);
      CHECK(m != NULL, "\"%s\": %s", line, err);
      if (!m) continue;
      double got = buf1[0], want = op_eval((PrimOp)op, a[0], a[1], a[2]);
      CHECK(isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want), "%s(%g, %g, %g) = %g, op_eval: %g",
            op_info[op].name, a[0], a[1], a[2], got, want);
      tdsl_close(m);
    }
}

int main(void) {
  test_values();
  test_every_primitive();
  test_random();
  test_rejected();
  return tk_exit("test_init_prog");
}
