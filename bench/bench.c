/* bench.c: times tdslc-generated code (hand-built graphs -> loop IR -> gccjit -O3,
 * host -march/-mtune) against plain C loops compiled with gcc -O3 -march=native, on:
 * a 512x512 matmul, a 4-D permute abcd->dcba (64^4), a row reduction ij->i
 * (4096x4096), and a batched matmul (32 x 128x128x128). Prints one line per kernel:
 *   NAME  TDSLC_SECONDS  PLAIN_C_SECONDS
 * bench/run.py adds numpy (OpenBLAS) and prints ratios. Not part of make check. */
#include <time.h>

#include "bench_util.h"
#include "graph_builder.h"

/* TDSL_BENCH_O=0..3 picks the optimization level of the generated code (default 3). */
static int opt_level(void) {
  const char *e = getenv("TDSL_BENCH_O");
  return e && *e >= '0' && *e <= '3' ? *e - '0' : 3;
}

/* Median-ish: best of reps after one warm-up (steady state, like timeit's min). */
#define TIME(reps, stmt)                      \
  ({                                          \
    stmt;                                     \
    double best = 1e30;                       \
    for (int r_ = 0; r_ < (reps); r_++) {     \
      double t0_ = now();                     \
      stmt;                                   \
      double t_ = now() - t0_;                \
      if (t_ < best) best = t_;               \
    }                                         \
    best;                                     \
  })

static float *data(GB *b, const char *name, long n) {
  tdsl_tensor_info ti;
  if (tdsl_tensor_by_name(b->m, name, &ti) || ti.size != n) {
    fprintf(stderr, "bench: no tensor %s\n", name);
    exit(1);
  }
  return ti.data;
}

static void fill(float *p, long n) {
  for (long i = 0; i < n; i++) p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
}

static float maxdiff(const float *a, const float *b, long n) {
  float d = 0;
  for (long i = 0; i < n; i++) d = fmaxf(d, fabsf(a[i] - b[i]));
  return d;
}

/* ---- plain C references (the "naive -O3" column) ---- */
__attribute__((noinline)) static void c_matmul(int B, int N, const float *restrict a, const float *restrict b, float *restrict c) {
  for (int z = 0; z < B; z++) {
    const float *A = a + (long)z * N * N, *Bm = b + (long)z * N * N;
    float *C = c + (long)z * N * N;
    for (int i = 0; i < N * N; i++) C[i] = 0;
    for (int i = 0; i < N; i++)
      for (int k = 0; k < N; k++)
        for (int j = 0; j < N; j++) C[i * N + j] += A[i * N + k] * Bm[k * N + j];
  }
}
__attribute__((noinline)) static void c_permute(int n, const float *restrict x, float *restrict y) {
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++)
      for (int c = 0; c < n; c++)
        for (int d = 0; d < n; d++) y[(((long)d * n + c) * n + b) * n + a] = x[(((long)a * n + b) * n + c) * n + d];
}
__attribute__((noinline)) static void c_rowsum(int n, const float *restrict x, float *restrict y) {
  for (int i = 0; i < n; i++) {
    float s = 0;
    for (int j = 0; j < n; j++) s += x[(long)i * n + j];
    y[i] = s;
  }
}

/* c[z,i,j] = sum_k a[z,i,k] b[z,k,j]; B = 0 builds a plain 2-D matmul. */
static void g_matmul(GB *b, int B, int N) {
  int nb = B ? 1 : 0;
  Tensor *a = gb_tensor(b, "a", TK_TERM, nb, 1, 1, B ? (int[]){B, N, N} : (int[]){N, N});
  Tensor *bb = gb_tensor(b, "b", TK_TERM, nb, 1, 1, B ? (int[]){B, N, N} : (int[]){N, N});
  Tensor *c = gb_tensor(b, "c", TK_OP, nb, 1, 1, B ? (int[]){B, N, N} : (int[]){N, N});
  int sizes[4] = {N, N, N, B};
  UpdateStep *s = gb_step(b, c, 2, (Tensor *[]){a, bb}, B ? 4 : 3, sizes); /* i j k z */
  int o = 0;
  if (B) {
    gb_it(s, 0, 0, 3);
    gb_it(s, 1, 0, 3);
    gb_it(s, 2, 0, 3);
    o = 1;
  }
  gb_it(s, 0, o, 0);
  gb_it(s, 0, o + 1, 1);
  gb_it(s, 1, o, 0);
  gb_it(s, 1, o + 1, 2);
  gb_it(s, 2, o, 2);
  gb_it(s, 2, o + 1, 1);
  gb_asgn(b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, ae_op(&b->a, OP_MUL, ae_buf(&b->a, a, false, 1), ae_buf(&b->a, bb, false, 2), NULL), s);
}

static void bench_matmul(const char *name, int B, int N, int reps) {
  GB b;
  gb_init(&b);
  g_matmul(&b, B, N);
  if (!gb_open(&b, opt_level(), false, false)) exit(1);
  long n = (long)(B ? B : 1) * N * N;
  float *a = data(&b, "a", n), *bb = data(&b, "b", n), *c = data(&b, "c", n);
  fill(a, n);
  fill(bb, n);
  float *ref = malloc(sizeof(float) * n);
  double tj = TIME(reps, tdsl_call(b.m, "c.forward"));
  double tc = TIME(reps, c_matmul(B ? B : 1, N, a, bb, ref));
  if (maxdiff(c, ref, n) > 1e-2f) fprintf(stderr, "bench: %s results differ\n", name);
  printf("%s %.6g %.6g\n", name, tj, tc);
  free(ref);
  gb_free(&b);
}

static void bench_permute(int n, int reps) {
  GB b;
  gb_init(&b);
  int d4[4] = {n, n, n, n};
  Tensor *x = gb_tensor(&b, "x", TK_TERM, 0, 4, 0, d4);
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 4, 0, d4);
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 4, d4); /* a b c d */
  for (int k = 0; k < 4; k++) {
    gb_it(s, 1, k, k);
    gb_it(s, 0, k, 3 - k);
  }
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ARG2, false, ae_buf(&b.a, x, false, 1), s);
  if (!gb_open(&b, opt_level(), false, false)) exit(1);
  long N = (long)n * n * n * n;
  float *xs = data(&b, "x", N), *ys = data(&b, "y", N), *ref = malloc(sizeof(float) * N);
  fill(xs, N);
  double tj = TIME(reps, tdsl_call(b.m, "y.forward"));
  double tc = TIME(reps, c_permute(n, xs, ref));
  if (maxdiff(ys, ref, N) != 0) fprintf(stderr, "bench: permute results differ\n");
  printf("permute_64^4 %.6g %.6g\n", tj, tc);
  free(ref);
  gb_free(&b);
}

static void bench_rowsum(int n, int reps) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_TERM, 0, 1, 1, (int[]){n, n});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 0, (int[]){n});
  UpdateStep *s = gb_step(&b, y, 1, (Tensor *[]){x}, 2, (int[]){n, n});
  gb_it(s, 0, 0, 0);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 1);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true, ae_buf(&b.a, x, false, 1), s);
  if (!gb_open(&b, opt_level(), false, false)) exit(1);
  long N = (long)n * n;
  float *xs = data(&b, "x", N), *ys = data(&b, "y", n), *ref = malloc(sizeof(float) * n);
  fill(xs, N);
  double tj = TIME(reps, tdsl_call(b.m, "y.forward"));
  double tc = TIME(reps, c_rowsum(n, xs, ref));
  if (maxdiff(ys, ref, n) > 1e-2f) fprintf(stderr, "bench: rowsum results differ\n");
  printf("rowsum_4096^2 %.6g %.6g\n", tj, tc);
  free(ref);
  gb_free(&b);
}

int main(void) {
  bench_matmul("matmul_512", 0, 512, 5);
  bench_permute(64, 5);
  bench_rowsum(4096, 5);
  bench_matmul("bmm_32x128", 32, 128, 5);
  return 0;
}
