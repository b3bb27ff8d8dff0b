/* shim.h: compiles tdslc's generated CUDA kernels (--emit-cuda) as host C, for
 * emulation without a GPU: cc -DTDSL_EMULATE -include shim.h -x c model.cu -shared -fPIC.
 * The runtime calls tdsl_emu_NAME(params, grid, block) in place of cuLaunchKernel when
 * TDSL_CUDA_EMULATE names the library.
 *
 * Two kinds of kernels:
 * - TDSL_EMU_ENTRY(k, call): threads independent of each other. Every thread of the grid
 *   runs one after the other, in reverse order: a kernel whose threads depend on each
 *   other's order gives different numbers than the CPU backend.
 * - TDSL_EMU_BLOCK_ENTRY(k, call): threads of a block cooperate (__shared__ memory,
 *   __syncthreads, warp shuffles). The threads of a block are fibers (ucontext) switched
 *   at barriers; blocks run one at a time, in reverse order, so __shared__ (a static
 *   local: one copy per kernel) is the block's. __syncthreads waits for every thread of
 *   the block that has not returned (as on sm_70+); a warp shuffle waits for the live
 *   threads of the warp, exchanges, and waits again. A barrier that some live thread
 *   never reaches aborts with a message (a deadlock on a GPU) instead of passing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

typedef struct tdsl_dim3 { unsigned x, y, z; } tdsl_dim3;
static tdsl_dim3 blockIdx, threadIdx, blockDim, gridDim;
typedef struct { float x, y, z, w; } float4;
typedef struct { unsigned x, y, z, w; } uint4;

#define TDSL_KERNEL static void
#define TDSL_KERNEL_MB(n) static void
#define TDSL_DEV static inline __attribute__((unused))
#define TDSL_NAN NAN
#define TDSL_INF INFINITY
#define __restrict__ restrict
#define __shared__ static
#define TDSL_ALIGN16 __attribute__((aligned(16)))
#define TDSL_DYN_SHARED(T, name, n) static T name[n] __attribute__((aligned(16)))
#define __syncthreads() tdsl_emu_barrier(0)
#define TDSL_LD4(p) tdsl_emu_ld4(p)
#define TDSL_ST4(p, v) tdsl_emu_st4((p), (v))
#define TDSL_SHFL_DOWN(v, d) tdsl_emu_shfl_down((v), (d))
#define TDSL_EMU_ENTRY(name, call)                                          \
  void tdsl_emu_##name(void **p, unsigned grid, unsigned block);            \
  void tdsl_emu_##name(void **p, unsigned grid, unsigned block) {           \
    gridDim.x = grid;                                                       \
    blockDim.x = block;                                                     \
    gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;                    \
    for (unsigned bi = grid; bi-- > 0;)                                     \
      for (unsigned ti = block; ti-- > 0;) {                                \
        blockIdx.x = bi;                                                    \
        threadIdx.x = ti;                                                   \
        call;                                                               \
      }                                                                     \
  }

/* A vector or async access at an address that is not a multiple of its size faults on
 * a GPU ("misaligned address"); here it stops with that message instead of reading. */
static __attribute__((unused)) void tdsl_emu_aligned(const void *p, unsigned bytes, const char *what) {
  if ((uintptr_t)p % bytes) {
    fprintf(stderr, "cuda emulation: misaligned %s at %p (needs %u-byte alignment: a fault on a GPU)\n", what, p, bytes);
    abort();
  }
}

/* 128-bit loads and stores (float4), which a GPU performs only at 16-byte aligned
 * addresses: the kernels write them as TDSL_LD4 / TDSL_ST4 so that the emulation checks
 * the address (a plain struct copy in C would not care). */
static __attribute__((unused)) float4 tdsl_emu_ld4(const void *p) {
  tdsl_emu_aligned(p, 16, "float4 load");
  float4 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static __attribute__((unused)) void tdsl_emu_st4(void *p, float4 v) {
  tdsl_emu_aligned(p, 16, "float4 store");
  memcpy(p, &v, sizeof v);
}

/* ---- cooperative blocks ---- */

enum { TDSL_EMU_MAX_THREADS = 1024, TDSL_EMU_WARPS = TDSL_EMU_MAX_THREADS / 32, TDSL_EMU_STACK = 1 << 16 };

/* Barrier 0 is the block's, barrier 1 + w warp w's: the live threads it waits for, how
 * many have arrived, and a generation that changes when it opens. */
typedef struct tdsl_emu_bar { unsigned live, arrived, gen; } tdsl_emu_bar;
static struct {
  ucontext_t main, ctx[TDSL_EMU_MAX_THREADS];
  char *stack[TDSL_EMU_MAX_THREADS];
  int wait[TDSL_EMU_MAX_THREADS]; /* the barrier a thread waits at, or -1 */
  unsigned wait_gen[TDSL_EMU_MAX_THREADS];
  char done[TDSL_EMU_MAX_THREADS];
  tdsl_emu_bar bar[1 + TDSL_EMU_WARPS];
  double xchg[TDSL_EMU_MAX_THREADS];
  unsigned frag[TDSL_EMU_MAX_THREADS][6]; /* a warp's mma operands */
  const unsigned *rows[TDSL_EMU_MAX_THREADS]; /* a warp's ldmatrix row addresses */
  void **params;
  void (*run)(void **);
} tdsl_emu;

static void tdsl_emu_open(tdsl_emu_bar *b) {
  b->arrived = 0;
  b->gen++;
}

static __attribute__((unused)) void tdsl_emu_barrier(unsigned which) {
  tdsl_emu_bar *b = &tdsl_emu.bar[which];
  unsigned t = threadIdx.x;
  if (++b->arrived == b->live) {
    tdsl_emu_open(b);
    return;
  }
  tdsl_emu.wait[t] = (int)which;
  tdsl_emu.wait_gen[t] = b->gen;
  swapcontext(&tdsl_emu.ctx[t], &tdsl_emu.main);
}

/* A returned thread no longer holds back the barriers of its block and warp. */
static void tdsl_emu_leave(unsigned which) {
  tdsl_emu_bar *b = &tdsl_emu.bar[which];
  b->live--;
  if (b->arrived && b->arrived == b->live) tdsl_emu_open(b);
}

static __attribute__((unused)) double tdsl_emu_shfl_down(double v, unsigned d) {
  unsigned t = threadIdx.x, w = 1 + t / 32;
  tdsl_emu.xchg[t] = v;
  tdsl_emu_barrier(w);
  double r = t % 32 + d < 32 && t + d < blockDim.x ? tdsl_emu.xchg[t + d] : v;
  tdsl_emu_barrier(w);
  return r;
}

/* TF32 (cvt.rna.tf32.f32): 10 mantissa bits, to nearest with ties away from zero. */
static __attribute__((unused)) unsigned tdsl_tf32(float x) {
  unsigned u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu; /* not inf or NaN */
  return u;
}

static float tdsl_emu_f(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* mma.sync m16n8k8 (row.col, TF32 in, fp32 accumulate), by the fragment layouts of the
 * PTX ISA: lane l = 4 g + t holds A(g, t), A(g + 8, t), A(g, t + 4), A(g + 8, t + 4),
 * B(t, g), B(t + 4, g) and D(g, 2t), D(g, 2t + 1), D(g + 8, 2t), D(g + 8, 2t + 1). The
 * warp's lanes exchange their fragments; each sums its cells' 8 products in k order
 * (the hardware's order and internal precision are unspecified). */
/* An mma operand must be a TF32 value (its low 13 mantissa bits clear, or inf or NaN):
 * the kernels round every operand (cvt.rna) before the tensor cores see it. */
static void tdsl_emu_tf32_operand(unsigned u) {
  if ((u & 0x1fffu) && (u & 0x7f800000u) != 0x7f800000u) {
    fprintf(stderr, "cuda emulation: an mma operand (0x%08x) is not rounded to TF32\n", u);
    abort();
  }
}

static __attribute__((unused)) void tdsl_mma_tf32(float *d, const unsigned *a, const unsigned *b) {
  unsigned t = threadIdx.x, w = 1 + t / 32, base = t - t % 32;
  for (int i = 0; i < 4; i++) tdsl_emu_tf32_operand(a[i]);
  tdsl_emu_tf32_operand(b[0]);
  tdsl_emu_tf32_operand(b[1]);
  for (int i = 0; i < 4; i++) tdsl_emu.frag[t][i] = a[i];
  tdsl_emu.frag[t][4] = b[0];
  tdsl_emu.frag[t][5] = b[1];
  tdsl_emu_barrier(w);
  unsigned g = t % 32 / 4, tg = t % 4;
  float r[4];
  for (int i = 0; i < 4; i++) {
    unsigned row = g + 8 * (i / 2), col = 2 * tg + i % 2;
    float s = d[i];
    for (unsigned k = 0; k < 8; k++) {
      unsigned al = base + row % 8 * 4 + k % 4, bl = base + col * 4 + k % 4;
      float av = tdsl_emu_f(tdsl_emu.frag[al][row / 8 + 2 * (k / 4)]), bv = tdsl_emu_f(tdsl_emu.frag[bl][4 + k / 4]);
      s = s + av * bv;
    }
    r[i] = s;
  }
  tdsl_emu_barrier(w);
  for (int i = 0; i < 4; i++) d[i] = r[i];
}

/* TF32 rounding of one float's bits in a register. */
static __attribute__((unused)) unsigned tdsl_tf32u(unsigned u) { return tdsl_tf32(tdsl_emu_f(u)); }

/* ldmatrix .m8n8.x4 .b16 from shared memory: lane l gives the address of row l % 8 of
 * matrix l / 8 (16 bytes, 16-byte aligned); lane 4 g + t receives word t of row g of
 * each matrix, in d[0..3]. */
static __attribute__((unused)) void tdsl_ldm4(unsigned *d, const unsigned *p) {
  unsigned t = threadIdx.x, w = 1 + t / 32, base = t - t % 32;
  tdsl_emu_aligned(p, 16, "ldmatrix row");
  tdsl_emu.rows[t] = p;
  tdsl_emu_barrier(w);
  unsigned r[4];
  for (int i = 0; i < 4; i++) r[i] = tdsl_emu.rows[base + 8 * i + t % 32 / 4][t % 4];
  /* A matrix is one pass of shared memory: its 8 rows must lie in 8 distinct 16-byte bank
   * groups, or the GPU serializes them (the swizzles of cuda_mma.c promise none). */
  if (t % 32 == 0)
    for (int i = 0; i < 4; i++) {
      unsigned seen = 0;
      for (int j = 0; j < 8; j++) seen |= 1u << ((uintptr_t)tdsl_emu.rows[base + 8 * i + j] / 16 % 8);
      if (seen != 0xffu) {
        fprintf(stderr, "cuda emulation: ldmatrix rows in the same banks (a conflict on a GPU)\n");
        abort();
      }
    }
  tdsl_emu_barrier(w);
  for (int i = 0; i < 4; i++) d[i] = r[i];
}

/* cp.async: each thread's copies wait in its queue, tagged with the group the next
 * commit closes; wait_group n completes the copies of all but the n newest committed
 * groups (and then the copies not yet committed stay queued, as on a GPU they may still
 * be in flight). A kernel that reads shared memory before its wait reads stale data
 * here. With TDSL_EMU_CP_EAGER set, every copy lands when issued instead, and the
 * highest runnable thread always runs first (its warp runs ahead of the others up to a
 * __syncthreads): a kernel that overwrites a stage before every warp is done reading it
 * reads the new data here. */
enum { TDSL_EMU_CP_MAX = 128 };
typedef struct tdsl_emu_cp { void *dst; const void *src; unsigned bytes, nb, group; } tdsl_emu_cp;
static struct {
  tdsl_emu_cp q[TDSL_EMU_MAX_THREADS][TDSL_EMU_CP_MAX];
  unsigned n[TDSL_EMU_MAX_THREADS], group[TDSL_EMU_MAX_THREADS];
  int eager;
} tdsl_emu_cps;

static void tdsl_emu_cp_land(const tdsl_emu_cp *c) {
  if (c->nb > c->bytes) abort(); /* cp.async's src-size is at most its cp-size */
  memcpy(c->dst, c->src, c->nb);
  memset((char *)c->dst + c->nb, 0, c->bytes - c->nb);
}

static void tdsl_emu_cp_async(void *dst, const void *src, unsigned bytes, int nb) {
  unsigned t = threadIdx.x;
  tdsl_emu_cp c = {dst, src, bytes, (unsigned)nb, tdsl_emu_cps.group[t]};
  tdsl_emu_aligned(dst, bytes, "cp.async destination");
  if (nb) tdsl_emu_aligned(src, bytes, "cp.async source");
  if (tdsl_emu_cps.eager) {
    tdsl_emu_cp_land(&c);
    return;
  }
  if (tdsl_emu_cps.n[t] == TDSL_EMU_CP_MAX) abort();
  tdsl_emu_cps.q[t][tdsl_emu_cps.n[t]++] = c;
}
static __attribute__((unused)) void tdsl_cp16(unsigned *d, const float *src, int nb) { tdsl_emu_cp_async(d, src, 16, nb); }
static __attribute__((unused)) void tdsl_cp4(unsigned *d, const float *src, int nb) { tdsl_emu_cp_async(d, src, 4, nb); }
#define TDSL_CP_COMMIT() (tdsl_emu_cps.group[threadIdx.x]++)
static __attribute__((unused)) void tdsl_emu_cp_wait(unsigned pending) {
  unsigned t = threadIdx.x, keep = 0, g = tdsl_emu_cps.group[t], done_below = g >= pending ? g - pending : 0;
  for (unsigned i = 0; i < tdsl_emu_cps.n[t]; i++) {
    tdsl_emu_cp *c = &tdsl_emu_cps.q[t][i];
    if (c->group >= done_below) tdsl_emu_cps.q[t][keep++] = *c;
    else tdsl_emu_cp_land(c);
  }
  tdsl_emu_cps.n[t] = keep;
}
#define TDSL_CP_WAIT(n) tdsl_emu_cp_wait(n)

static void tdsl_emu_fiber(void) {
  unsigned t = threadIdx.x;
  tdsl_emu.run(tdsl_emu.params);
  tdsl_emu.done[t] = 1;
  tdsl_emu_leave(0);
  tdsl_emu_leave(1 + t / 32);
}

/* Runs one block: its threads are fibers, resumed last first whenever the barrier they
 * wait at has opened. No runnable fiber while some have not returned is a deadlock: a
 * barrier not reached by every live thread of its block or warp. */
static void tdsl_emu_block(unsigned block) {
  tdsl_emu.bar[0] = (tdsl_emu_bar){block, 0, 0};
  for (unsigned w = 0; w * 32 < block; w++)
    tdsl_emu.bar[1 + w] = (tdsl_emu_bar){block - w * 32 < 32 ? block - w * 32 : 32, 0, 0};
  for (unsigned t = 0; t < block; t++) {
    if (!tdsl_emu.stack[t] && !(tdsl_emu.stack[t] = malloc(TDSL_EMU_STACK))) abort();
    getcontext(&tdsl_emu.ctx[t]);
    tdsl_emu.ctx[t].uc_stack.ss_sp = tdsl_emu.stack[t];
    tdsl_emu.ctx[t].uc_stack.ss_size = TDSL_EMU_STACK;
    tdsl_emu.ctx[t].uc_link = &tdsl_emu.main;
    makecontext(&tdsl_emu.ctx[t], tdsl_emu_fiber, 0);
    tdsl_emu.done[t] = 0;
    tdsl_emu.wait[t] = -1;
    tdsl_emu_cps.n[t] = tdsl_emu_cps.group[t] = 0;
  }
  for (unsigned left = block; left;) {
    unsigned ran = 0;
    for (unsigned t = block; t-- > 0;) {
      int w = tdsl_emu.wait[t];
      if (tdsl_emu.done[t] || (w >= 0 && tdsl_emu.bar[w].gen == tdsl_emu.wait_gen[t])) continue;
      tdsl_emu.wait[t] = -1;
      threadIdx.x = t;
      swapcontext(&tdsl_emu.main, &tdsl_emu.ctx[t]);
      ran++;
      left -= tdsl_emu.done[t];
      if (tdsl_emu_cps.eager) t = block; /* the highest warp runs ahead of the others */
    }
    if (!ran) {
      fprintf(stderr, "cuda emulation: deadlock in block %u: a barrier or shuffle not reached by every thread\n",
              blockIdx.x);
      abort();
    }
  }
}

static __attribute__((unused)) void tdsl_emu_blocks(void **p, unsigned grid, unsigned block, void (*run)(void **)) {
  if (block > TDSL_EMU_MAX_THREADS) abort();
  gridDim = (tdsl_dim3){grid, 1, 1};
  blockDim = (tdsl_dim3){block, 1, 1};
  tdsl_emu.params = p;
  tdsl_emu.run = run;
  tdsl_emu_cps.eager = getenv("TDSL_EMU_CP_EAGER") != NULL;
  for (unsigned bi = grid; bi-- > 0;) {
    blockIdx = (tdsl_dim3){bi, 0, 0};
    tdsl_emu_block(block);
  }
  for (unsigned t = 0; t < block; t++) { /* the library may be unloaded: nothing stays */
    free(tdsl_emu.stack[t]);
    tdsl_emu.stack[t] = NULL;
  }
}

#define TDSL_EMU_BLOCK_ENTRY(name, call)                                             \
  static void tdsl_emu_run_##name(void **p) { call; }                                \
  void tdsl_emu_##name(void **p, unsigned grid, unsigned block);                     \
  void tdsl_emu_##name(void **p, unsigned grid, unsigned block) {                    \
    tdsl_emu_blocks(p, grid, block, tdsl_emu_run_##name);                            \
  }
