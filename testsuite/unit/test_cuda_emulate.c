/* The CUDA backend without a GPU, on hand-built graphs: each model is lowered once and
 * run twice, by the CPU backend (gccjit) and as a cuda model whose kernels are the
 * generated CUDA source compiled as host C with testsuite/cuda/shim.h (the runtime's
 * TDSL_CUDA_EMULATE mode: real host routines, kernel table, lazy copies). Every tensor
 * must come out the same. Also: the kernel source compiles with NVRTC when the toolkit
 * is there, which loops run in parallel, and that opening a cuda model on a machine
 * without a driver fails with a message. */
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include "graph_builder.h"
#include "cuda.h"

/* Plans of the next models use TF32 mma (--tf32), compared with this tolerance. */
static bool cu_tf32;
static double cu_tf32_tol;
/* The target of the next plans: 80 stages tiles with cp.async, 70 with plain loads. */
static int cu_sm = 80;

typedef struct Cu {
  char dir[64];
  gcc_jit_context *jc;
  gcc_jit_result *jr;
  tdsl_model *m;
  CudaPlan *plan;
} Cu;

static void *cu_resolve(void *h, const char *name) {
  if (!strncmp(name, "tdsl_fn_", 8) || !strcmp(name, "tdsl_model_meta"))
    return gcc_jit_result_get_code((gcc_jit_result *)h, name);
  return gcc_jit_result_get_global((gcc_jit_result *)h, name);
}

/* The shim next to this file, as an absolute path (tests run from the repository root). */
static const char *shim_path(void) {
  static char path[PATH_MAX];
  if (!path[0] && !realpath("testsuite/cuda/shim.h", path)) return NULL;
  return path;
}

/* Compiles the plan's kernels as host C into DIR/k.so. */
static bool build_emulation(Cu *c, const char *src) {
  snprintf(c->dir, sizeof c->dir, "/tmp/tdsl-cuda-XXXXXX");
  if (!mkdtemp(c->dir) || !shim_path()) return false;
  char path[128], cmd[PATH_MAX + 512];
  snprintf(path, sizeof path, "%s/k.cu", c->dir);
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fputs(src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -O1 -w -DTDSL_EMULATE -include '%s' -x c %s/k.cu -shared -fPIC -o %s/k.so -lm", shim_path(),
           c->dir, c->dir);
  return system(cmd) == 0;
}

static void cu_close(Cu *c) {
  if (c->m) tdsl_close(c->m);
  if (c->jr) gcc_jit_result_release(c->jr);
  if (c->jc) gcc_jit_context_release(c->jc);
  if (c->dir[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    if (system(cmd)) fprintf(stderr, "cannot remove %s\n", c->dir);
  }
  memset(c, 0, sizeof *c);
}

/* ptxas (no GPU needed) assembles the PTX for sm_80 and sm_90. */
static void ptxas_check(Cu *c, const char *ptx) {
  const char *home = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";
  char tool[PATH_MAX], path[128], cmd[2 * PATH_MAX];
  snprintf(tool, sizeof tool, "%s/bin/ptxas", home);
  if (access(tool, X_OK) || !c->dir[0]) return;
  snprintf(path, sizeof path, "%s/k.ptx", c->dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(ptx, f);
  fclose(f);
  const char *arch[2] = {"sm_80", "sm_90"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o /dev/null", tool, arch[i], path);
    if (system(cmd)) {
      fprintf(stderr, "ptxas -arch=%s failed\n", arch[i]);
      failures++;
    }
  }
}

/* The cuda model of b's IR, emulated; init with seed 0. */
static bool cu_open(GB *b, Cu *c) {
  memset(c, 0, sizeof *c);
  c->plan = cuda_plan(&b->a, b->ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm});
  if (getenv("TDSL_SHOW_CUDA")) fputs(c->plan->src, stderr); /* for debugging */
  const char *ptx = "// no toolkit: the emulation ignores the PTX\n";
  if (cuda_available()) {
    ptx = cuda_ptx(&b->a, c->plan->src, "sm_80");
    CHECK(ptx != NULL);
    if (!ptx) return false;
  }
  /* TDSL_CUDA_GPU=1 (make check-gpu): the real driver and GPU instead of the emulation. */
  bool gpu = getenv("TDSL_CUDA_GPU") != NULL;
  if (!gpu) CHECK(build_emulation(c, c->plan->src));
  if (cuda_available()) ptxas_check(c, ptx);
  c->jr = cuda_host_mem(&b->a, b->ir, c->plan, ptx, "tdsl", 1, &c->jc);
  CHECK(c->jr != NULL);
  if (!c->jr) return false;
  char lib[128], err[512];
  snprintf(lib, sizeof lib, "%s/k.so", c->dir);
  if (!gpu) setenv("TDSL_CUDA_EMULATE", lib, 1);
  c->m = tdsl_open_resolved(cu_resolve, c->jr, err, sizeof err);
  unsetenv("TDSL_CUDA_EMULATE");
  if (!c->m) fprintf(stderr, "cuda open: %s\n", err);
  CHECK(c->m != NULL);
  return c->m && tdsl_init(c->m, 0) == 0;
}

/* Every tensor of the CPU model equals the cuda model's (bit for bit in the emulation:
 * same operations in the same order, up to the C compiler's contraction). */
static void same_tensors(GB *b, Cu *c, const char *when) {
  /* Split reductions add in another order; GPU math functions differ by ulps. */
  double tol = cu_tf32 ? cu_tf32_tol : getenv("TDSL_CUDA_GPU") ? 1e-4 : 2e-5;
  for (int i = 0; i < tdsl_num_tensors(b->m); i++) {
    tdsl_tensor_info ti;
    CHECK(tdsl_tensor(b->m, i, &ti) == 0);
    double *x = calloc((size_t)ti.size, sizeof(double)), *y = calloc((size_t)ti.size, sizeof(double));
    CHECK(tdsl_read_f64(b->m, ti.name, x, ti.size) == 0);
    if (tdsl_read_f64(c->m, ti.name, y, ti.size)) {
      fprintf(stderr, "%s: read %s: %s\n", when, ti.name, tdsl_error(c->m));
      failures++;
    }
    for (long k = 0; k < ti.size; k++)
      if (!(x[k] == y[k] || (isnan(x[k]) && isnan(y[k])) || fabs(x[k] - y[k]) <= tol * (1 + fabs(x[k])))) {
        fprintf(stderr, "%s: %s[%ld]: cpu %.9g, cuda %.9g\n", when, ti.name, k, x[k], y[k]);
        failures++;
        break;
      }
    free(x);
    free(y);
  }
}

/* Runs the routines on both models, comparing everything after each. */
static void run_both(GB *b, int n, const char **calls) {
  Cu c;
  if (!gb_open(b, 1, false, false) || !cu_open(b, &c)) {
    failures++;
    cu_close(&c);
    return;
  }
  same_tensors(b, &c, "after init");
  for (int i = 0; i < n; i++) {
    gb_call(b, calls[i]);
    if (tdsl_call(c.m, calls[i])) {
      fprintf(stderr, "cuda call %s: %s\n", calls[i], tdsl_error(c.m));
      failures++;
    }
    same_tensors(b, &c, calls[i]);
  }
  cu_close(&c);
}

/* ---- graphs ---- */

/* c[i,j] = sum_k a[i,k] b[k,j] (M x K by K x N, from ranges), with backprop into both. */
static void build_matmul(GB *b, int M, int K, int N) {
  Tensor *a = gb_tensor(b, "a", TK_PARAM, 0, 1, 1, (int[]){M, K});
  Tensor *bb = gb_tensor(b, "b", TK_PARAM, 0, 1, 1, (int[]){K, N});
  Tensor *c = gb_tensor(b, "c", TK_OP, 0, 1, 1, (int[]){M, N});
  a->init.kind = INIT_UNIFORM;
  bb->init.kind = INIT_RANGE;
  a->diff = bb->diff = c->diff = true;
  UpdateStep *s = gb_matmul(b, a, bb, c, M, N, K);
  gb_asgn(b, &c->bwd, (Buf){a, true}, 1, OP_ADD, false, ae_op(&b->a, OP_MUL, ae_buf(&b->a, c, true, 0), ae_buf(&b->a, bb, false, 2), NULL), s);
  gb_asgn(b, &c->bwd, (Buf){bb, true}, 2, OP_ADD, false, ae_op(&b->a, OP_MUL, ae_buf(&b->a, a, false, 1), ae_buf(&b->a, c, true, 0), NULL), s);
}

/* The routine "seed" sets every cell of c.grad (build_matmul's c) to 1.5. */
static void seed_routine(GB *b, int M, int N) {
  Routine *r = gb_routine(b, "seed");
  UpdateStep *s = gb_step(b, b->g.tensors.items[2], 0, NULL, 2, (int[]){M, N});
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_asgn(b, &r->code, (Buf){b->g.tensors.items[2], true}, 0, OP_ARG2, false, ae_const(&b->a, 1.5), s);
}

static void test_matmul(int M, int K, int N) {
  GB b;
  gb_init(&b);
  build_matmul(&b, M, K, N);
  seed_routine(&b, M, N);
  run_both(&b, 4, (const char *[]){"c.forward", "seed", "c.backprop", "c.backprop"});
  gb_free(&b);
}

/* c[b,i,j] = sum_k a[b,i,2k+1] * w[b,j,k] (a strided operand, w read across its rows). */
static void build_bmm(GB *b, int B, int M, int K, int N) {
  Tensor *a = gb_tensor(b, "a", TK_PARAM, 1, 1, 1, (int[]){B, M, 2 * K + 1});
  Tensor *w = gb_tensor(b, "w", TK_PARAM, 1, 1, 1, (int[]){B, N, K});
  Tensor *c = gb_tensor(b, "c", TK_OP, 1, 1, 1, (int[]){B, M, N});
  a->init.kind = w->init.kind = INIT_UNIFORM;
  UpdateStep *s = gb_step(b, c, 2, (Tensor *[]){a, w}, 4, (int[]){B, M, N, K});
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 0, 2, 2);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 1);
  gb_ax(s, 1, 2, 1, 1, 2, 3);
  gb_it(s, 2, 0, 0);
  gb_it(s, 2, 1, 2);
  gb_it(s, 2, 2, 3);
  gb_asgn(b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true,
          ae_op(&b->a, OP_MUL, ae_buf(&b->a, a, false, 1), ae_buf(&b->a, w, false, 2), NULL), s);
}

/* Batched contractions through the tiled kernel, edge tiles in every role. */
static void test_bmm(int B, int M, int K, int N) {
  GB b;
  gb_init(&b);
  build_bmm(&b, B, M, K, N);
  run_both(&b, 2, (const char *[]){"c.forward", "c.forward"});
  char want[128];
  snprintf(want, sizeof want, "contraction, %d x %d x %d (batch %d)", M, N, K, B);
  CHECK(strstr(cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm})->src, want) != NULL);
  gb_free(&b);
}

/* Tiles are staged through registers into two shared buffers: 128-bit global loads
 * where the operand is contiguous and aligned (a row-major a is transposed on the way),
 * scalar loads where it strides; the products read 4 neighbours per 128-bit shared load.
 * Both targets (sm_70, and sm_80 which runs the other tests) stage the same way. */
static void test_staging(void) {
  cu_sm = 70;
  test_matmul(264, 36, 260);
  test_bmm(3, 70, 45, 130);
  cu_sm = 80;
  GB b;
  gb_init(&b);
  build_matmul(&b, 264, 36, 260);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.sm = 80})->src;
  CHECK(strstr(src, "float4 rA[1];") != NULL && strstr(src, "float4 rB[1];") != NULL);
  CHECK(strstr(src, "A[buf ^ 1][kk + 3][rr] = rA[u].w;") != NULL);
  /* 128-bit accesses through TDSL_LD4/TDSL_ST4, which the shim checks for alignment */
  CHECK(strstr(src, "TDSL_ST4(&B[buf ^ 1][kk][rr], rB[u]);") != NULL);
  CHECK(strstr(src, "TDSL_LD4(&A[buf][kk][i * 64 + ty * 4])") != NULL);
  CHECK(strstr(src, "*(float4 *)&") == NULL && strstr(src, "*(const float4 *)&") == NULL); /* none unchecked */
  gb_free(&b);
  gb_init(&b);
  /* a[b,i,2k+1]: strided along K, staged by scalar loads; w[b,j,k] transposed. */
  build_bmm(&b, 2, 64, 32, 64);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.sm = 80})->src;
  CHECK(strstr(src, "float rA[4];") != NULL && strstr(src, "float4 rB[1];") != NULL);
  CHECK(strstr(src, "B[buf ^ 1][kk + 3][rr] = rB[u].w;") != NULL);
  gb_free(&b);
}

/* A fill of 0 before a contraction that writes every cell of its destination goes: the
 * cells start from 0. When the contraction writes only some cells (c[b] for b < 2 of 3),
 * the fill stays and is launched first. */
static void fill_taken(int cover_b) {
  GB b;
  gb_init(&b);
  Tensor *a = gb_tensor(&b, "a", TK_PARAM, 1, 1, 1, (int[]){3, 20, 24});
  Tensor *w = gb_tensor(&b, "w", TK_PARAM, 1, 1, 1, (int[]){3, 24, 18});
  Tensor *c = gb_tensor(&b, "c", TK_OP, 1, 1, 1, (int[]){3, 20, 18});
  a->init.kind = w->init.kind = INIT_UNIFORM;
  UpdateStep *s = gb_step(&b, c, 2, (Tensor *[]){a, w}, 4, (int[]){cover_b, 20, 18, 24});
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 0, 2, 2);
  gb_it(s, 1, 0, 0);
  gb_it(s, 1, 1, 1);
  gb_it(s, 1, 2, 3);
  gb_it(s, 2, 0, 0);
  gb_it(s, 2, 1, 3);
  gb_it(s, 2, 2, 2);
  gb_asgn(&b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, a, false, 1), ae_buf(&b.a, w, false, 2), NULL), s);
  run_both(&b, 2, (const char *[]){"c.forward", "c.forward"});
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.sm = 80})->src;
  CHECK((strstr(src, "from 0 (fill taken)") != NULL) == (cover_b == 3));
  CHECK((strstr(src, ": fill c") != NULL) == (cover_b != 3));
  gb_free(&b);
}

static void test_fill_taken(void) {
  fill_taken(3);
  fill_taken(2);
}

/* Routines whose kernels are all small and one thread per point run as one kernel of one
 * block (cuda_fuse.c), their buffers in shared memory when they fit (a 8x5x6 matmul's
 * backprop), else in global memory (a 100x10x100 one's 56 KB); the numbers are the
 * CPU's. A tiled contraction (70x20x70's gradients) keeps its routine launch by launch. */
static void fused(int M, int K, int N, const char *want, bool fused) {
  GB b;
  gb_init(&b);
  build_matmul(&b, M, K, N);
  seed_routine(&b, M, N);
  run_both(&b, 5, (const char *[]){"c.forward", "c.forward", "seed", "c.backprop", "c.backprop"});
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.sm = 80})->src;
  CHECK((strstr(src, want) != NULL) == fused);
  if (M == 8) {
    /* c.forward's nest takes the fill of c: its cells start from 0 in the register. */
    CHECK(strstr(src, ": fill c") == NULL && strstr(src, "float acc = ((float)0") != NULL);
    /* c.backprop: the two gradients read c.grad and write a.grad and b.grad: one phase,
     * no barrier between their nests. */
    const char *bp = strstr(src, "c.backprop: 2 nests in one block");
    const char *k1 = bp ? strstr(bp, "  /* k") : NULL, *k2 = k1 ? strstr(k1 + 1, "  /* k") : NULL;
    CHECK(k1 && k2);
    if (k1 && k2) CHECK(memmem(k1, (size_t)(k2 - k1), "__syncthreads", 13) == NULL);
  }
  gb_free(&b);
}

static void test_fused_routines(void) {
  fused(8, 5, 6, "c.backprop: 2 nests in one block, buffers in shared memory", true);
  fused(100, 10, 100, "c.backprop: 2 nests in one block */", true);
  fused(100, 10, 100, "buffers in shared memory", false);
  fused(70, 20, 70, "nests in one block", false);
}

/* Split-K: a 40 x 24 product over 1100 reduced points is one tile: two blocks sum 560
 * and 540 points into scratch memory, a second kernel adds them to the cells. */
static void test_split_k(void) {
  test_matmul(40, 1100, 24);
  GB b;
  gb_init(&b);
  build_matmul(&b, 40, 1100, 24);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm})->src;
  CHECK(strstr(src, "contraction, 40 x 24 x 1100 (batch 1), 64x64 tiles") != NULL);
  CHECK(strstr(src, cu_tf32 ? "split-K 2 x 576" : "split-K 2 x 560") != NULL); /* a multiple of BK: 32 with TF32 */
  CHECK(strstr(src, "split-K combine of 2") != NULL);
  /* --strict-fp: each cell sums its whole K in order, no split-K */
  src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm, .strict_fp = true})->src;
  CHECK(strstr(src, "contraction, 40 x 24 x 1100 (batch 1), 64x64 tiles") != NULL && strstr(src, "split-K") == NULL);
  gb_free(&b);
}

/* c.forward of an M x K by K x N product over big TF32 tiles, emulated; its kernel's
 * description, launch bounds and dynamic shared memory (the declaration and the kernel
 * table's bytes). */
static void tf32_tiles(int M, int K, int N, const char *what, const char *bounds, const char *decl, const char *bytes) {
  GB b;
  gb_init(&b);
  build_matmul(&b, M, K, N);
  run_both(&b, 1, (const char *[]){"c.forward"});
  CudaPlan *p = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = true, .sm = cu_sm});
  CHECK(strstr(p->src, what) != NULL, "%s", what);
  CHECK(strstr(p->src, bounds) != NULL && strstr(p->src, decl) != NULL);
  CHECK(strstr(p->meta, bytes) != NULL && strstr(p->meta, "\nsmem ") != NULL);
  gb_free(&b);
}

/* A 257 x 260 product over 4100 points: 128 x 128 TF32 tiles (split-K makes enough
 * blocks, two per SM), 96 KB of dynamic shared memory, copies guarded. A 256 x 512 one
 * over 4096: 128 x 256 tiles (64 x 64 per warp, one block per SM), 144 KB, whole tiles
 * copied from one pointer per operand; a by ldmatrix (K-major), b by 32-bit loads
 * (row-major). */
static void test_tf32_big(void) {
  tf32_tiles(257, 4100, 260,
             "contraction, 257 x 260 x 4100 (batch 1), 128x128 tiles, TF32 mma (cp.async, 3 stages of 32), split-K 8 x 544",
             "TDSL_KERNEL_MB(2) ", "TDSL_DYN_SHARED(unsigned, sm, 24576);", " 98304\n");
  tf32_tiles(256, 4096, 512, "contraction, 256 x 512 x 4096 (batch 1), 128x256 tiles, TF32 mma (cp.async, 3 stages of 32), split-K ",
             "TDSL_KERNEL_MB(1) ", "TDSL_DYN_SHARED(unsigned, sm, 36864);", " 147456\n");
}

/* --tf32: the contractions multiply TF32-rounded operands on (emulated) tensor cores
 * (cuda_mma.c), within TF32's precision of the CPU's fp32; the shim refuses an mma
 * operand not rounded to TF32. Whole tiles (unguarded copies), edge tiles of 1, 7 (bmm), 17 rows or columns and K tails
 * of 1, 7 and 17 points; each operand in both layouts (c.backprop's products read a and
 * b transposed, K-major or row-major in shared memory) and strided (bmm: copied element
 * by element); split-K; 128 x 128 tiles. Once more with every cp.async landing when
 * issued (TDSL_EMU_CP_EAGER): a stage overwritten while a warp still reads it shows. */
static void test_tf32(void) {
  cu_tf32 = true;
  cu_tf32_tol = 3e-3;
  int before = failures;
  test_matmul(264, 36, 260);
  test_matmul(128, 64, 192); /* whole tiles: every product's copies from one pointer */
  test_matmul(129, 65, 17); /* 1 row and 17 columns past the tiles, K tail 1 */
  test_matmul(17, 39, 129); /* 17 rows, 1 column; K tail 7 (c.backprop's b.grad: 17) */
  test_bmm(3, 70, 45, 130);
  test_bmm(2, 71, 33, 17);  /* 7 rows, 17 columns; K tail 1 */
  test_split_k();
  setenv("TDSL_EMU_CP_EAGER", "1", 1);
  test_matmul(129, 65, 17);
  test_bmm(2, 71, 33, 17);
  unsetenv("TDSL_EMU_CP_EAGER");
  test_tf32_big();
  GB b;
  gb_init(&b);
  build_matmul(&b, 40, 20, 30);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CHECK(strstr(cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = true, .sm = cu_sm})->src, "TF32 mma") != NULL);
  CHECK(strstr(cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = false, .sm = cu_sm})->src, "TF32 mma") == NULL);
  gb_free(&b);
  cu_tf32 = false;
  if (failures > before) fprintf(stderr, "tf32: %d failures\n", failures - before);
}

/* Sums and maxima over all or some axes, from -inf; a scalar through slot -1. */
static void test_reductions(void) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 1, (int[]){70, 300});
  Tensor *k = gb_tensor(&b, "k", TK_CONST, 0, 1, 0, (int[]){1});
  Tensor *total = gb_tensor(&b, "total", TK_OP, 0, 1, 0, (int[]){1});
  Tensor *rowmax = gb_tensor(&b, "rowmax", TK_OP, 0, 1, 0, (int[]){70});
  Tensor *colsum = gb_tensor(&b, "colsum", TK_OP, 0, 1, 0, (int[]){300});
  x->init.kind = INIT_UNIFORM;
  k->init.kind = INIT_CONST;
  k->init.value = -2;
  UpdateStep *s1 = gb_step(&b, total, 1, (Tensor *[]){x}, 2, (int[]){70, 300});
  gb_ax(s1, 0, 0, 0, 0);
  gb_it(s1, 1, 0, 0);
  gb_it(s1, 1, 1, 1);
  gb_asgn(&b, &total->fwd, (Buf){total, false}, 0, OP_ADD, true, ae_buf(&b.a, x, false, 1), s1);
  UpdateStep *s2 = gb_step(&b, rowmax, 1, (Tensor *[]){x}, 2, (int[]){70, 300});
  gb_it(s2, 0, 0, 0);
  gb_it(s2, 1, 0, 0);
  gb_it(s2, 1, 1, 1);
  gb_asgn(&b, &rowmax->fwd, (Buf){rowmax, false}, 0, OP_MAX, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, k, false, -1), NULL), s2);
  UpdateStep *s3 = gb_step(&b, colsum, 1, (Tensor *[]){x}, 2, (int[]){70, 300});
  gb_it(s3, 0, 0, 1);
  gb_it(s3, 1, 0, 0);
  gb_it(s3, 1, 1, 1);
  gb_asgn(&b, &colsum->fwd, (Buf){colsum, false}, 0, OP_ADD, true,
          ae_op(&b.a, OP_TANH, ae_buf(&b.a, x, false, 1), NULL, NULL), s3);
  /* Long reductions into few cells are split across threads: allmax over all of x,
   * tall[j] = sum_i x2[i, j] + x2[i + 1, j] (padded: i = 4999 contributes nothing). */
  Tensor *allmax = gb_tensor(&b, "allmax", TK_OP, 0, 1, 0, (int[]){1});
  Tensor *x2 = gb_tensor(&b, "x2", TK_CONST, 0, 1, 1, (int[]){5000, 3});
  Tensor *tall = gb_tensor(&b, "tall", TK_OP, 0, 1, 0, (int[]){3});
  x2->init.kind = INIT_UNIFORM;
  UpdateStep *s4 = gb_step(&b, allmax, 1, (Tensor *[]){x}, 2, (int[]){70, 300});
  gb_ax(s4, 0, 0, 0, 0);
  gb_it(s4, 1, 0, 0);
  gb_it(s4, 1, 1, 1);
  gb_asgn(&b, &allmax->fwd, (Buf){allmax, false}, 0, OP_MAX, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, k, false, -1), NULL), s4);
  UpdateStep *s5 = gb_step(&b, tall, 2, (Tensor *[]){x2, x2}, 2, (int[]){3, 5000});
  gb_it(s5, 0, 0, 0);
  gb_it(s5, 1, 0, 1);
  gb_it(s5, 1, 1, 0);
  gb_ax(s5, 2, 0, 1, 1, 1, 1);
  gb_it(s5, 2, 1, 0);
  gb_asgn(&b, &tall->fwd, (Buf){tall, false}, 0, OP_ADD, true,
          ae_op(&b.a, OP_ADD, ae_buf(&b.a, x2, false, 1), ae_buf(&b.a, x2, false, 2), NULL), s5);
  run_both(&b, 5, (const char *[]){"total.forward", "rowmax.forward", "colsum.forward", "allmax.forward", "tall.forward"});
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm})->src;
  CHECK(strstr(src, "split reduction, 328 chunks") != NULL); /* total: 21000 / 64 */
  CHECK(strstr(src, "split reduction, 78 chunks") != NULL);  /* tall: 5000 / 64 */
  /* Neighbouring threads read neighbouring cells: chunks of total's contiguous run,
   * columns of tall (a column sum). */
  CHECK(strstr(src, "long c = t % 328L;") != NULL);
  CHECK(strstr(src, "long c = t / 3L;\n  t %= 3L;\n  long slot = t * 78L + c;") != NULL);
  /* --strict-fp: every reduction in one thread, in the CPU's order */
  src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm, .strict_fp = true})->src;
  CHECK(strstr(src, "split reduction") == NULL && strstr(src, "block reduction") == NULL);
  gb_free(&b);
}

/* Row reductions with enough rows get one block per row, combined by warp shuffles:
 * sum, max (of x * -2) and a padded sum (x[i, j] + x[i, j + 1], j + 1 < 300). */
static void test_block_reductions(void) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 1, (int[]){130, 300});
  Tensor *k = gb_tensor(&b, "k", TK_CONST, 0, 1, 0, (int[]){1});
  Tensor *rs = gb_tensor(&b, "rs", TK_OP, 0, 1, 0, (int[]){130});
  Tensor *rm = gb_tensor(&b, "rm", TK_OP, 0, 1, 0, (int[]){130});
  Tensor *ps = gb_tensor(&b, "ps", TK_OP, 0, 1, 0, (int[]){130});
  x->init.kind = INIT_UNIFORM;
  k->init.kind = INIT_CONST;
  k->init.value = -2;
  UpdateStep *s[3];
  for (int i = 0; i < 3; i++) {
    Tensor *out = i == 0 ? rs : i == 1 ? rm : ps;
    s[i] = gb_step(&b, out, i == 2 ? 2 : 1, (Tensor *[]){x, x}, 2, (int[]){130, 300});
    gb_it(s[i], 0, 0, 0);
    gb_it(s[i], 1, 0, 0);
    gb_it(s[i], 1, 1, 1);
  }
  gb_it(s[2], 2, 0, 0);
  gb_ax(s[2], 2, 1, 1, 1, 1, 1);
  gb_asgn(&b, &rs->fwd, (Buf){rs, false}, 0, OP_ADD, true, ae_buf(&b.a, x, false, 1), s[0]);
  gb_asgn(&b, &rm->fwd, (Buf){rm, false}, 0, OP_MAX, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, k, false, -1), NULL), s[1]);
  gb_asgn(&b, &ps->fwd, (Buf){ps, false}, 0, OP_ADD, true,
          ae_op(&b.a, OP_ADD, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, x, false, 2), NULL), s[2]);
  run_both(&b, 4, (const char *[]){"rs.forward", "rm.forward", "ps.forward", "ps.forward"});
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm})->src, *p = src;
  int found = 0;
  while ((p = strstr(p, "block reduction, 130 points of 300"))) found++, p++;
  CHECK(found == 3);
  src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm, .strict_fp = true})->src;
  CHECK(strstr(src, "block reduction") == NULL && strstr(src, "split reduction") == NULL);
  gb_free(&b);
}

/* Padded convolution and max-pool: guards skip the out-of-range points. */
static void test_padded_conv(void) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 0, (int[]){500});
  Tensor *w = gb_tensor(&b, "w", TK_CONST, 0, 1, 0, (int[]){5});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 0, (int[]){500});
  Tensor *z = gb_tensor(&b, "z", TK_OP, 0, 1, 0, (int[]){500});
  x->init.kind = INIT_UNIFORM;
  gb_values(&b, w, 5, (double[]){1, -2, 3, 0.5, 0.25});
  gb_conv1d_graph(&b, x, w, y, y, z, 500, 5);
  run_both(&b, 2, (const char *[]){"y.forward", "z.forward"});
  gb_free(&b);
}

/* Index symbols as kernel arguments; the value set on the host reaches the kernel,
 * also through CUDA graphs (captured with the symbol values of their capture: a call
 * with other values captures again, up to a limit, then runs launch by launch). */
static void test_symbol(void) {
  GB b;
  gb_init(&b);
  gb_symbol_graph(&b);
  Cu c;
  if (gb_open(&b, 1, false, false) && cu_open(&b, &c)) {
    for (int i = 0; i < 12; i++) {
      int v = i < 6 ? i % 3 : i / 6; /* changes, then stays */
      CHECK(tdsl_set_index(b.m, "n", v) == 0 && tdsl_set_index(c.m, "n", v) == 0);
      gb_call(&b, "y.forward");
      CHECK(tdsl_call(c.m, "y.forward") == 0);
      same_tensors(&b, &c, "symbol");
    }
  } else failures++;
  cu_close(&c);
  gb_free(&b);
}

/* A routine called again and again is replayed as a CUDA graph; what the host writes
 * between calls reaches the device first, and what the graph writes reaches the host. */
static void test_graph_replay(void) {
  GB b;
  gb_init(&b);
  build_matmul(&b, 20, 30, 40);
  Cu c;
  float *a = malloc(sizeof(float) * 600);
  if (a && gb_open(&b, 1, false, false) && cu_open(&b, &c)) {
    for (int i = 0; i < 8; i++) {
      if (i == 4 || i == 6) {
        for (int k = 0; k < 600; k++) a[k] = (float)((k * 7 + i) % 13) - 6;
        CHECK(tdsl_write(b.m, "a", a, 600) == 0 && tdsl_write(c.m, "a", a, 600) == 0);
      }
      gb_call(&b, i % 2 ? "c.backprop" : "c.forward");
      CHECK(tdsl_call(c.m, i % 2 ? "c.backprop" : "c.forward") == 0);
      same_tensors(&b, &c, "graph replay");
    }
  } else failures++;
  free(a);
  cu_close(&c);
  gb_free(&b);
}

/* In place: x[i] = x[i] * 2 runs in parallel; y[i] += y[i+1] reads a neighbour's
 * cell, so it must run in one thread, in order (the emulation runs threads in
 * reverse: a parallel version would give other numbers). */
static void test_in_place(void) {
  GB b;
  gb_init(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 0, (int[]){600});
  Tensor *y = gb_tensor(&b, "y", TK_CONST, 0, 1, 0, (int[]){600});
  x->init.kind = y->init.kind = INIT_RANGE;
  Routine *r = gb_routine(&b, "step");
  UpdateStep *s = gb_step(&b, x, 1, (Tensor *[]){x}, 1, (int[]){600});
  gb_it(s, 0, 0, 0);
  gb_it(s, 1, 0, 0);
  gb_asgn(&b, &r->code, (Buf){x, false}, 0, OP_MUL, false, ae_const(&b.a, 2), s);
  UpdateStep *s2 = gb_step(&b, y, 1, (Tensor *[]){y}, 1, (int[]){599});
  gb_it(s2, 0, 0, 0);
  gb_ax(s2, 1, 0, 1, 1, 1, 0);
  gb_asgn(&b, &r->code, (Buf){y, false}, 0, OP_ADD, false, ae_buf(&b.a, y, false, 1), s2);
  run_both(&b, 2, (const char *[]){"step", "step"});
  const char *src = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm})->src;
  CHECK(strstr(src, "if (t >= 600L) return;") != NULL); /* x: one thread per cell */
  CHECK(strstr(src, "if (t >= 1L) return;") != NULL);   /* y: one thread */
  gb_free(&b);
}

/* Double precision buffers and constants. */
static void test_double(void) {
  GB b;
  gb_init(&b);
  gb_double_sum(&b);
  b.ir = lower_graph(&b.a, &b.d, &b.g, true);
  Cu c;
  if (b.ir && cu_open(&b, &c)) {
    CHECK(tdsl_call(c.m, "y.forward") == 0);
    double got[2];
    CHECK(tdsl_read_f64(c.m, "y", got, 2) == 0);
    CHECK(got[0] == 1e8 + 0.2 && got[1] == 0.1 + 0.2);
  } else failures++;
  cu_close(&c);
  gb_free(&b);
}

/* Without TDSL_CUDA_EMULATE and without a driver, opening fails with a message. */
static void test_no_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    fprintf(stderr, "libcuda.so.1 is present: no-driver check skipped\n");
    return;
  }
  GB b;
  gb_init(&b);
  build_matmul(&b, 2, 3, 4);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CudaPlan *p = cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm});
  gcc_jit_context *jc = NULL;
  gcc_jit_result *jr = cuda_host_mem(&b.a, b.ir, p, "// ptx", "tdsl", 0, &jc);
  CHECK(jr != NULL);
  if (jr) {
    char err[512] = "";
    unsetenv("TDSL_CUDA_EMULATE");
    tdsl_model *m = tdsl_open_resolved(cu_resolve, jr, err, sizeof err);
    CHECK(m == NULL);
    CHECK(strstr(err, "cuda model: cannot load libcuda.so.1") != NULL);
    fprintf(stderr, "no driver: %s\n", err);
    if (m) tdsl_close(m);
    gcc_jit_result_release(jr);
  }
  if (jc) gcc_jit_context_release(jc);
  gb_free(&b);
}


/* ---- dynamic sizes: the plan is static, the extents and the grid come at launch ---- */

/* The dynamic dimension "n" of b's graph (DIM_DYN of its id). */
static int dyn_n(GB *b) {
  DimSym *n = ANEW(&b->a, DimSym);
  n->name = "n";
  vec_push(&b->a, &b->g.dimsyms, n);
  return DIM_DYN(b->g.dimsyms.len - 1);
}

/* Both models (CPU and emulated cuda) run calls at each number of rows n in sizes (set
 * at run time on the same models: dynamic tensors reallocated and initialized again,
 * static ones such as gradients keep accumulating); every tensor compared after each. */
static void run_dyn(GB *b, int nsizes, const int *sizes, int ncalls, const char **calls) {
  Cu c;
  if (!gb_open(b, 1, false, false) || !cu_open(b, &c)) {
    failures++;
    cu_close(&c);
    return;
  }
  for (int i = 0; i < nsizes; i++) {
    char when[64];
    CHECK(tdsl_set_dim(b->m, "n", sizes[i]) == 0 && tdsl_set_dim(c.m, "n", sizes[i]) == 0, "n = %d", sizes[i]);
    for (int k = 0; k < ncalls; k++) {
      gb_call(b, calls[k]);
      if (tdsl_call(c.m, calls[k])) {
        fprintf(stderr, "cuda call %s at n = %d: %s\n", calls[k], sizes[i], tdsl_error(c.m));
        failures++;
      }
      snprintf(when, sizeof when, "%s at n = %d", calls[k], sizes[i]);
      same_tensors(b, &c, when);
    }
  }
  cu_close(&c);
}

static const char *dyn_src(GB *b) {
  if (!b->ir) b->ir = lower_graph(&b->a, &b->d, &b->g, false);
  return cuda_plan(&b->a, b->ir, &(CudaPlanOpts){.tf32 = cu_tf32, .sm = cu_sm})->src;
}

/* c[n, N] = sum_k a * w over n rows set at run time, with both gradients: a.grad (M = n)
 * and w.grad (K = n: split-K whose chunk adapts at launch, over 512 rows partial sums).
 * trans: a stored [K, n] (its K stride is n: a stride over a dynamic dim) and w [N, K]
 * (read across its rows); else a [n, K] and w [K, N]. The routine "seed" sets c.grad = c. */
static void build_dyn_matmul(GB *b, int K, int N, bool trans) {
  int n = dyn_n(b);
  Tensor *a = gb_tensor(b, "a", TK_PARAM, 0, 1, 1, trans ? (int[]){K, n} : (int[]){n, K});
  Tensor *w = gb_tensor(b, "w", TK_PARAM, 0, 1, 1, trans ? (int[]){N, K} : (int[]){K, N});
  Tensor *c = gb_tensor(b, "c", TK_OP, 0, 1, 1, (int[]){n, N});
  a->init.kind = w->init.kind = INIT_UNIFORM;
  a->diff = w->diff = c->diff = true;
  UpdateStep *s = gb_step(b, c, 2, (Tensor *[]){a, w}, 3, (int[]){n, N, K}); /* i, j, k */
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 1, 0, trans ? 2 : 0);
  gb_it(s, 1, 1, trans ? 0 : 2);
  gb_it(s, 2, 0, trans ? 1 : 2);
  gb_it(s, 2, 1, trans ? 2 : 1);
  gb_asgn(b, &c->fwd, (Buf){c, false}, 0, OP_ADD, true, ae_op(&b->a, OP_MUL, ae_buf(&b->a, a, false, 1), ae_buf(&b->a, w, false, 2), NULL), s);
  gb_asgn(b, &c->bwd, (Buf){a, true}, 1, OP_ADD, false, ae_op(&b->a, OP_MUL, ae_buf(&b->a, c, true, 0), ae_buf(&b->a, w, false, 2), NULL), s);
  gb_asgn(b, &c->bwd, (Buf){w, true}, 2, OP_ADD, false, ae_op(&b->a, OP_MUL, ae_buf(&b->a, a, false, 1), ae_buf(&b->a, c, true, 0), NULL), s);
  Routine *r = gb_routine(b, "seed");
  UpdateStep *s2 = gb_step(b, c, 1, (Tensor *[]){c}, 2, (int[]){n, N});
  gb_it(s2, 0, 0, 0);
  gb_it(s2, 0, 1, 1);
  gb_it(s2, 1, 0, 0);
  gb_it(s2, 1, 1, 1);
  gb_asgn(b, &r->code, (Buf){c, true}, 0, OP_ARG2, false, ae_buf(&b->a, c, false, 1), s2);
}

/* Matmuls over a dynamic batch are tiled contractions in both operand layouts, at run-
 * time sizes that leave edge tiles (1, 7, 17, 65, 129 rows), several tiles and K long
 * enough for split-K's partial sums (600 and 1100: two and three chunks of 512). */
static void test_dyn_matmul(void) {
  static const int sizes[] = {1, 7, 17, 65, 129, 600, 1100, 3};
  for (int t = 0; t < 2; t++) {
    GB b;
    gb_init(&b);
    build_dyn_matmul(&b, 20, 70, t);
    const char *src = dyn_src(&b);
    CHECK(strstr(src, "contraction, n x 70 x 20 (batch 1), 64x64 tiles") != NULL); /* c */
    /* a.grad: n rows of 20 (or 20 rows of n, contiguous along n) */
    CHECK(strstr(src, t ? "contraction, 20 x n x 70 (batch 1), 64x64 tiles" : "contraction, n x 20 x 70 (batch 1), 64x64 tiles"));
    /* w.grad: its K is n */
    CHECK(strstr(src, "contraction, 20 x 70 x n (batch 1), 64x64 tiles, split-K up to 132, chunks of >= 512"));
    CHECK(strstr(src, "long nbm = (eM + 63) / 64, nbn = 2;") != NULL);
    /* a [n, 20] is read by float4 along K; a [20, n] (stride n) by scalars. */
    CHECK((strstr(src, "v = TDSL_LD4(&b0[") != NULL) == !t);
    CHECK(strstr(b.ir ? cuda_plan(&b.a, b.ir, &(CudaPlanOpts){.sm = 80})->meta : "", "tceil ") != NULL);
    run_dyn(&b, 8, sizes, 4, (const char *[]){"c.forward", "seed", "c.backprop", "c.backprop"});
    gb_free(&b);
  }
  /* --tf32: the same tiles on (emulated) tensor cores, within TF32's precision. */
  cu_tf32 = true;
  cu_tf32_tol = 3e-3;
  GB b;
  gb_init(&b);
  build_dyn_matmul(&b, 20, 70, false);
  const char *src = dyn_src(&b);
  /* cuda_mma.c's kernel, dynamic sizes included; w.grad splits its dynamic K (600: two
   * splits of 512, one split at 1, 17 and 65, which writes the cells itself). */
  CHECK(strstr(src, "contraction, n x 70 x 20 (batch 1), 64x64 tiles, TF32 mma (cp.async, 3 stages of 32)") != NULL);
  CHECK(strstr(src, "contraction, n x 20 x 70 (batch 1), 64x64 tiles, TF32 mma (cp.async, 3 stages of 32)") != NULL);
  CHECK(strstr(src, "contraction, 20 x 70 x n (batch 1), 64x64 tiles, TF32 mma (cp.async, 3 stages of 32), split-K up to "
                    "132, chunks of >= 512") != NULL);
  CHECK(strstr(src, "kc = kc < 512 ? 512 : (kc + 31) / 32 * 32;") != NULL);
  run_dyn(&b, 5, (const int[]){1, 17, 600, 65, 1100}, 4, (const char *[]){"c.forward", "seed", "c.backprop", "c.backprop"});
  gb_free(&b);
  cu_tf32 = false;
}

/* g[i, j] = sum_r x[r, i] * x[r, j] over n rows (a Gram matrix: a static output, K = n):
 * the fill of 0 before it is taken (its split-K's cells start from 0). */
static void test_dyn_gram(void) {
  GB b;
  gb_init(&b);
  int n = dyn_n(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 1, (int[]){n, 40});
  Tensor *g = gb_tensor(&b, "g", TK_OP, 0, 1, 1, (int[]){40, 40});
  x->init.kind = INIT_UNIFORM;
  UpdateStep *s = gb_step(&b, g, 2, (Tensor *[]){x, x}, 3, (int[]){40, 40, n});
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 1, 0, 2);
  gb_it(s, 1, 1, 0);
  gb_it(s, 2, 0, 2);
  gb_it(s, 2, 1, 1);
  gb_asgn(&b, &g->fwd, (Buf){g, false}, 0, OP_ADD, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, x, false, 2), NULL), s);
  const char *src = dyn_src(&b);
  CHECK(strstr(src, "contraction, 40 x 40 x n (batch 1), 64x64 tiles, split-K up to 264, chunks of >= 512, from 0 (fill taken)") != NULL);
  CHECK(strstr(src, ": fill g") == NULL);
  run_dyn(&b, 4, (const int[]){3, 600, 1, 1100}, 2, (const char *[]){"g.forward", "g.forward"});
  gb_free(&b);
}

/* A zero-padded convolution over a dynamic batch: y[b, o, c] = sum_k x[b, o + k - 4] *
 * w[c, k] (o < 30, k < 9, 16 channels) is a contraction whose padding guard is tested
 * where x is staged. */
static void test_dyn_conv(void) {
  GB b;
  gb_init(&b);
  int n = dyn_n(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 1, 1, 0, (int[]){n, 30});
  Tensor *w = gb_tensor(&b, "w", TK_CONST, 0, 1, 1, (int[]){16, 9});
  Tensor *y = gb_tensor(&b, "y", TK_OP, 1, 1, 1, (int[]){n, 30, 16});
  x->init.kind = w->init.kind = INIT_UNIFORM;
  UpdateStep *s = gb_step(&b, y, 2, (Tensor *[]){x, w}, 4, (int[]){n, 30, 16, 9});
  gb_it(s, 0, 0, 0);
  gb_it(s, 0, 1, 1);
  gb_it(s, 0, 2, 2);
  gb_it(s, 1, 0, 0);
  gb_ax(s, 1, 1, -4, 2, 1, 1, 1, 3);
  gb_it(s, 2, 0, 2);
  gb_it(s, 2, 1, 3);
  gb_asgn(&b, &y->fwd, (Buf){y, false}, 0, OP_ADD, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, w, false, 2), NULL), s);
  CHECK(strstr(dyn_src(&b), "contraction, 30*n x 16 x 9 (batch 1)") != NULL);
  run_dyn(&b, 4, (const int[]){1, 3, 7, 2}, 2, (const char *[]){"y.forward", "y.forward"});
  gb_free(&b);
}

/* Reductions over a dynamic number of rows n of x [n, 300]: row sums, one block per row
 * (n blocks); column sums split into chunks of 64 rows, as many as n needs (one: the
 * cell folded in the CPU's order); a max over all of x, split likewise. */
static void test_dyn_reductions(void) {
  GB b;
  gb_init(&b);
  int n = dyn_n(&b);
  Tensor *x = gb_tensor(&b, "x", TK_CONST, 0, 1, 1, (int[]){n, 300});
  Tensor *k = gb_tensor(&b, "k", TK_CONST, 0, 1, 0, (int[]){1});
  Tensor *rs = gb_tensor(&b, "rs", TK_OP, 0, 1, 0, (int[]){n});
  Tensor *cs = gb_tensor(&b, "cs", TK_OP, 0, 1, 0, (int[]){300});
  Tensor *mx = gb_tensor(&b, "mx", TK_OP, 0, 1, 0, (int[]){1});
  x->init.kind = INIT_UNIFORM;
  k->init.kind = INIT_CONST;
  k->init.value = -2;
  UpdateStep *s1 = gb_step(&b, rs, 1, (Tensor *[]){x}, 2, (int[]){n, 300});
  gb_it(s1, 0, 0, 0);
  gb_it(s1, 1, 0, 0);
  gb_it(s1, 1, 1, 1);
  gb_asgn(&b, &rs->fwd, (Buf){rs, false}, 0, OP_ADD, true, ae_buf(&b.a, x, false, 1), s1);
  UpdateStep *s2 = gb_step(&b, cs, 1, (Tensor *[]){x}, 2, (int[]){300, n});
  gb_it(s2, 0, 0, 0);
  gb_it(s2, 1, 0, 1);
  gb_it(s2, 1, 1, 0);
  gb_asgn(&b, &cs->fwd, (Buf){cs, false}, 0, OP_ADD, false, ae_op(&b.a, OP_TANH, ae_buf(&b.a, x, false, 1), NULL, NULL), s2);
  UpdateStep *s3 = gb_step(&b, mx, 1, (Tensor *[]){x}, 2, (int[]){n, 300});
  gb_ax(s3, 0, 0, 0, 0);
  gb_it(s3, 1, 0, 0);
  gb_it(s3, 1, 1, 1);
  gb_asgn(&b, &mx->fwd, (Buf){mx, false}, 0, OP_MAX, true,
          ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_buf(&b.a, k, false, -1), NULL), s3);
  const char *src = dyn_src(&b);
  CHECK(strstr(src, "block reduction, n points of 300") != NULL);
  CHECK(strstr(src, "cs.fwd: split reduction, up to 54 chunks") != NULL);
  CHECK(strstr(src, "mx.fwd: split reduction, up to 16384 chunks") != NULL);
  run_dyn(&b, 5, (const int[]){1, 7, 65, 1100, 64}, 3, (const char *[]){"rs.forward", "cs.forward", "mx.forward"});
  gb_free(&b);
}

int main(void) {
  test_matmul(2, 3, 4);
  test_matmul(37, 53, 29);
  test_matmul(264, 36, 260); /* 128 x 128 tiles, float4 loads of both operands */
  test_bmm(3, 70, 45, 130);
  test_bmm(1, 16, 8, 65);
  test_block_reductions();
  test_staging();
  test_fill_taken();
  test_fused_routines();
  test_split_k();
  test_tf32();
  test_reductions();
  test_padded_conv();
  test_symbol();
  test_graph_replay();
  test_in_place();
  test_double();
  test_no_driver();
  test_dyn_matmul();
  test_dyn_gram();
  test_dyn_conv();
  test_dyn_reductions();
  return tk_exit("test_cuda_emulate");
}
