/* cuda_tile.c: kernels whose threads cooperate within a block.
 *
 * Contractions. A nest whose only statement is dst[cell] =add A[..] * B[..], with the
 * cell indexed by the parallel loops, is a batched matrix product once its loops are
 * sorted by role: M (parallel, read by A only), N (parallel, read by B only), batch
 * (parallel, read by both or neither) and K (the reduction). Loops of a role are
 * linearized, innermost fastest, so any strides and affine offsets of the projections
 * work. A block of 256 threads computes a BM x BN tile of one batch entry: per step of BK
 * reduced points it stages A and B tiles in shared memory (out-of-range cells as 0, read
 * with 128-bit loads when aligned), then each thread updates its TM x TN register tile.
 * The next step's tiles are loaded into registers while this step's products run and
 * stored into the other of two shared buffers after them (one barrier per step); a
 * thread's cells are 4 neighbouring rows (columns) at a time, read by 128-bit shared
 * loads. Blocks walk the tiles in groups of 8 rows of tiles, for L2 reuse.
 * Each cell starts from its current value (or from 0 when the fill of 0 before the nest
 * is taken: the contraction writes every cell) and adds the products in the CPU's order
 * (K linearized in loop order, the tail step shortened rather than padded), so the result
 * is the CPU backend's up to contraction of a*b+c into fma.
 *
 * Padding. A store under padding guards (a zero-padded convolution) is a contraction
 * too when each guard reads the loops of one operand's staging (batch, K and M, or N):
 * out of range, the staged value is 0, as the CPU kernels pack it (so a padded cell
 * times an infinite weight is NaN, as in PyTorch's zero padding).
 *
 * Reductions. A long reduction whose points are many enough to fill the GPU (but not so
 * many short ones that a thread per point does), read contiguously along the reduced
 * loop, gets one block per point: the threads stride
 * over the reduced points, then combine by warp shuffles and through shared memory
 * (reassociated: the CPU backend adds in source order).
 *
 * Few tiles over a long reduction are split along K (split-K): partial tiles into
 * scratch memory, then a kernel adds them to the cells.
 *
 * With --tf32, fp32 contractions multiply on tensor cores: cuda_mma.c emits them over
 * the same recognition, tile shape, tile order and split-K, static or dynamic sizes.
 *
 * Indices are 32-bit when every affine index provably fits (cheaper on the GPU).
 *
 * Dynamic sizes. The plan (tiling or not, tile shape, vector loads, split-K) comes from
 * the static factors, a dynamic loop counted as IR_DYN_EXT_GUESS; a dynamic role's
 * extent is computed at the kernel's start from its dim arguments (eM, ...), and the
 * grid's tile counts over it by the runtime (CudaKernel.ceils). */
#include <stdlib.h>

#include "cuda_tile.h"

enum { TILE_MIN_CELLS = 1024, TILE_MIN_CELLS_K = 256 };

static const char *const role_var[4] = {"eB", "eM", "eN", "eK"};

/* A role's extent in a kernel: its constant (with suffix L), or when dynamic the
 * variable the kernel computed it into at its start (dyn_extents). */
static const char *ext_txt(const E *e, const Ct *c, int role, const char *L) {
  return c->dext[role] ? role_var[role] : arena_printf(e->a, "%ld%s", c->ext[role], L);
}

static const char *ext_what(const E *e, const Ct *c, int role) { return cu_ext_what(e, c->ext[role], c->dext[role]); }

/* Declares each dynamic role's extent (long eM = ...), from the kernel's dim arguments. */
static void dyn_extents(E *e, const Ct *c) {
  for (int r = 0; r < 4; r++) {
    if (!c->dext[r]) continue;
    fprintf(e->o, "  long %s = ", role_var[r]);
    cr_ext(&e->r, c->ext[r], c->dext[r]);
    fputs(";\n", e->o);
  }
}

static long coef_of(const Aff *f, int var) {
  long c = 0;
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var == var) c += f->t[i].coef;
  return c;
}

/* |stride| of var for the plan: a stride over dynamic dims counted as IR_DYN_EXT_GUESS
 * per product (coef_of's when static). */
static long stride_guess(const Aff *f, int var) {
  long c = 0;
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var == var) c += f->t[i].dyn ? f->t[i].coef * IR_DYN_EXT_GUESS : f->t[i].coef;
  return labs(c);
}

/* The innermost loop of a role (-1 if none). */
static int inner_var(const Ct *c, int role) {
  for (int i = c->n - 1; i >= 0; i--)
    if (c->role[i] == role) return c->chain[i]->var;
  return -1;
}

/* Every value of the affine form over the loops (and the bounded symbols) fits in an int. */
static bool aff_fits_int(const E *e, const Aff *f, const Stmt **chain, int n) {
  long lo = f->off, hi = f->off;
  for (int i = 0; i < f->n; i++) {
    long ext = 0;
    if (f->t[i].var < 0) ext = VEC_AT(e->m->syms, IrSym, -1 - f->t[i].var)->range;
    for (int j = 0; j < n; j++)
      if (chain[j]->var == f->t[i].var) ext = chain[j]->ext;
    if (ext <= 0 || ext > (1L << 30) || labs(f->t[i].coef) > (1L << 30)) return false;
    long span = f->t[i].coef * (ext - 1);
    if (span < 0) lo += span;
    else hi += span;
    if (lo < -(1L << 30) || hi > (1L << 30)) return false;
  }
  return true;
}

/* float4 loads of x along var: contiguous, every other stride and the offset multiples
 * of 4 (buffers are 256-byte aligned), the extent a multiple of 4. Over dynamic dims
 * that holds for every value of them when var's stride is static and every static
 * factor (of a stride over dims, of a dynamic extent) is a multiple of 4. */
static bool vec4_ok(const E *e, const Access *x, int var, long ext) {
  if (cu_buf(e, x->buf)->elem != ELEM_F32 || coef_of(&x->flat, var) != 1 || ext % 4 || x->flat.off % 4) return false;
  for (int i = 0; i < x->flat.n; i++)
    if ((x->flat.t[i].var != var && x->flat.t[i].coef % 4) || (x->flat.t[i].var == var && x->flat.t[i].dyn)) return false;
  return true;
}

/* A padding guard is tested where an operand's cell is staged: out of range, the
 * staged value is 0 (zero padding, as the CPU kernels pack it). So each guard may read
 * only the loops that one operand's staging knows: batch, K and M (for A) or N (for B). */
static bool guard_sides(Ct *c) {
  if (c->guard->nguards > (int)sizeof c->gside) return false;
  for (int g = 0; g < c->guard->nguards; g++) {
    const Guard *gd = &c->guard->guards[g];
    bool m = false, nn = false;
    if (gd->dext) return false;
    for (int t = 0; t < gd->aff.n; t++)
      for (int i = 0; i < c->n; i++)
        if (c->chain[i]->var == gd->aff.t[t].var) {
          if (c->role[i] == R_NONE) return false;
          m |= c->role[i] == R_M;
          nn |= c->role[i] == R_N;
        }
    if (m && nn) return false;
    c->gside[g] = nn ? 'B' : 'A';
  }
  return true;
}

static bool recognize(E *e, Ct *c, const Stmt **chain, int n, const int *par, const Stmt *st) {
  const IrExpr *v = st->val;
  if (st->accum != OP_ADD || v->kind != X_OP || v->op != OP_MUL || v->a[0]->kind != X_LOAD || v->a[1]->kind != X_LOAD)
    return false;
  if (chain[n - 1]->body.len != 1) return false;
  const Stmt *body = chain[n - 1]->body.items[0];
  if (body->kind == S_IF && body->body.len == 1 && body->body.items[0] == st) c->guard = body;
  else if (body != st) return false;
  c->chain = chain;
  c->n = n;
  c->a = &v->a[0]->acc;
  c->b = &v->a[1]->acc;
  /* b is the operand that the innermost parallel loop (the output's contiguous axis) reads. */
  int inner_par = -1;
  for (int i = 0; i < n; i++)
    if (par[i] == PAR) inner_par = chain[i]->var;
  if (inner_par >= 0 && coef_of(&c->a->flat, inner_par) && !coef_of(&c->b->flat, inner_par)) {
    const Access *t = c->a;
    c->a = c->b;
    c->b = t;
  }
  for (int r = 0; r < 4; r++) c->ext[r] = c->guess[r] = 1;
  for (int i = 0; i < n; i++) {
    int var = chain[i]->var;
    bool in_a = coef_of(&c->a->flat, var), in_b = coef_of(&c->b->flat, var);
    if (par[i] == DROP) {
      if (in_a || in_b || coef_of(&st->dst.flat, var)) return false;
      c->role[i] = R_NONE;
      continue;
    }
    int r = c->role[i] = par[i] == SEQ ? R_K : in_a && !in_b ? R_M : in_b && !in_a ? R_N : R_BATCH;
    c->ext[r] = mul_sat(c->ext[r], chain[i]->ext); /* past 2^62: no 32-bit indices below */
    c->guess[r] = mul_sat(c->guess[r], chain[i]->dext ? chain[i]->ext * IR_DYN_EXT_GUESS : chain[i]->ext);
    if (chain[i]->dext) {
      c->dext[r] = ir_prod_mul(e->a, e->mm, c->dext[r], chain[i]->dext);
      c->dyn = true;
    }
  }
  if (c->guard && !guard_sides(c)) return false;
  /* Fewer cells than one small tile over a short reduction: a thread per cell does it,
   * and leaves the nest to a fused routine (cuda_fuse.c). */
  if (mul_sat(c->guess[R_BATCH], mul_sat(c->guess[R_M], c->guess[R_N])) < TILE_MIN_CELLS && c->guess[R_K] < TILE_MIN_CELLS_K) return false;
  return c->guess[R_M] >= 16 && c->guess[R_N] >= 16 && c->guess[R_K] >= 8;
}

/* Tile shape. 128 x 128 tiles (8 x 8 cells per thread) when they still give every SM of
 * a large GPU two blocks, or when the reduction is long enough for split-K to make the
 * blocks; else 64 x 64 (4 x 4): a 1024^3 product has 64 big tiles but 256 small ones.
 * TF32 has 128 x 256 tiles too (cuda_mma.c).
 * BK reduced points per step: 8 for big tiles (registers), 16 for small; MMA_BK for the
 * TF32 kernel. */
enum { BIG_TILE_MIN_BLOCKS = 264, BIG_TILE_SPLIT_K = 4096 };

static void shape(E *e, Ct *c) {
  const long *g = c->guess;
  long big_blocks = mul_sat(g[R_BATCH], mul_sat((g[R_M] + 127) / 128, (g[R_N] + 127) / 128));
  /* Over dynamic sizes, 64-bit index arithmetic: a 128 x 128 tile capped at 128
   * registers (two blocks per SM) would spill on sm_90, so dynamic nests take 64 x 64. */
  bool big = !c->dyn && g[R_M] >= 256 && g[R_N] >= 256 && (big_blocks >= BIG_TILE_MIN_BLOCKS || g[R_K] >= BIG_TILE_SPLIT_K);
  c->bm = c->bn = big ? 128 : 64;
  c->tm = c->tn = big ? 8 : 4;
  bool tf32 = e->tf32 && cu_buf(e, c->a->buf)->elem == ELEM_F32;
  /* TF32: 128 x 256 tiles (one block per SM) when they too make two waves, or split-K
   * makes the blocks: 64 x 64 warp tiles read half the shared memory per mma. */
  long wide_blocks = mul_sat(g[R_BATCH], mul_sat((g[R_M] + 127) / 128, (g[R_N] + 255) / 256));
  if (tf32 && big && g[R_N] >= 512 && (wide_blocks >= BIG_TILE_MIN_BLOCKS || g[R_K] >= BIG_TILE_SPLIT_K)) {
    c->bn = 256;
    c->tn = 16;
  }
  c->bk = tf32 ? MMA_BK : big ? 8 : 16;
  int km = inner_var(c, R_K), mm = inner_var(c, R_M), nn = inner_var(c, R_N);
  c->a_kfast = stride_guess(&c->a->flat, km) <= stride_guess(&c->a->flat, mm) || !coef_of(&c->a->flat, mm);
  c->b_nfast = stride_guess(&c->b->flat, nn) <= stride_guess(&c->b->flat, km) || !coef_of(&c->b->flat, km);
  /* Only when one role's loop is the whole contiguous run (a single loop of that role). */
  int nk = 0, nm = 0, nnl = 0;
  for (int i = 0; i < c->n; i++) {
    nk += c->role[i] == R_K;
    nm += c->role[i] == R_M;
    nnl += c->role[i] == R_N;
  }
  c->vec_a = c->a_kfast ? nk == 1 && vec4_ok(e, c->a, km, c->ext[R_K]) : nm == 1 && vec4_ok(e, c->a, mm, c->ext[R_M]);
  c->vec_b = c->b_nfast ? nnl == 1 && vec4_ok(e, c->b, nn, c->ext[R_N]) : nk == 1 && vec4_ok(e, c->b, km, c->ext[R_K]);
}

/* Declares the loop variables of a role from the linear index expression lin. */
static void decomp(E *e, const Ct *c, int role, const char *lin, int ind) {
  const char *T = e->r.idx32 ? "int" : "long";
  cu_indent(e, ind);
  fprintf(e->o, "%s q%d = %s;\n", T, role, lin);
  cu_decompose(e, c->chain, c->n, c->role, role, arena_printf(e->a, "q%d", role), ind);
}

/* Staging of one operand tile x[rows of role ro][BK] into S[buf][BK][rows] by way of
 * registers: the loads of the next step's tile are issued before this step's products
 * (their latency hides behind the FMAs), the stores to the other buffer after. Thread
 * threadIdx.x + 256 u holds element el of the tile: along K first when x is contiguous
 * along K (kfast), else along the rows; with vec, 4 neighbours as one float4. */
typedef struct Stage {
  const Access *x;
  char S;         /* 'A' or 'B' */
  int ro;         /* R_M or R_N */
  int rows;       /* of the tile */
  bool kfast, vec;
  int units;      /* loads per thread */
} Stage;

static Stage stage_of(const Ct *c, const Access *x, char S, int ro, bool kfast, bool vec) {
  Stage s = {x, S, ro, ro == R_M ? c->bm : c->bn, kfast, vec, 0};
  s.units = s.rows * c->bk / CUDA_BLOCK / (vec ? 4 : 1);
  return s;
}

/* rr (row in the tile) and kk (reduced point in the step) of element u of this thread. */
static void stage_el(E *e, const Ct *c, const Stage *s, int ind) {
  int w = s->vec ? 4 : 1;
  cu_indent(e, ind);
  if (s->kfast)
    fprintf(e->o, "int el = threadIdx.x + %d * u, rr = el / %d, kk = el %% %d * %d;\n", CUDA_BLOCK, c->bk / w, c->bk / w, w);
  else fprintf(e->o, "int el = threadIdx.x + %d * u, kk = el / %d, rr = el %% %d * %d;\n", CUDA_BLOCK, s->rows / w, s->rows / w, w);
}

/* "if (the guards of side S hold) " before the staged load, or nothing. */
static void stage_guard(E *e, const Ct *c, char S) {
  bool any = false;
  for (int g = 0; c->guard && g < c->guard->nguards; g++) {
    if (c->gside[g] != S) continue;
    const Guard *gd = &c->guard->guards[g];
    fputs(any ? " && " : "        if (", e->o);
    any = true;
    fputc('(', e->o);
    cr_aff(&e->r, &gd->aff);
    fputs(") >= 0 && (", e->o);
    cr_aff(&e->r, &gd->aff);
    fprintf(e->o, ") < %ld", gd->ext);
  }
  if (any) fputs(")\n  ", e->o);
}

static void stage_load(E *e, const Ct *c, const Stage *s, const char *T, const char *kb) {
  FILE *o = e->o;
  const char *I = e->r.idx32 ? "int" : "long", *r0 = s->ro == R_M ? "m0" : "n0";
  fprintf(o, "    for (int u = 0; u < %d; u++) {\n", s->units);
  stage_el(e, c, s, 3);
  fprintf(o, "      %s r = %s + rr, k = %s + kk;\n", I, r0, kb);
  if (s->vec) fprintf(o, "      float4 v = {0, 0, 0, 0};\n");
  else fprintf(o, "      %s v = 0;\n", T);
  fprintf(o, "      if (r < %s && k < %s) {\n", ext_txt(e, c, s->ro, ""), ext_txt(e, c, R_K, ""));
  decomp(e, c, s->ro, "r", 4);
  decomp(e, c, R_K, "k", 4);
  stage_guard(e, c, s->S);
  /* 128-bit accesses go through TDSL_LD4/TDSL_ST4: the emulation checks their alignment */
  if (s->vec) fputs("        v = TDSL_LD4(&", o);
  else fprintf(o, "        v = (%s)", T);
  cr_access(&e->r, s->x);
  fprintf(o, "%s;\n      }\n      r%c[u] = v;\n    }\n", s->vec ? ")" : "", s->S);
}

static void stage_store(E *e, const Ct *c, const Stage *s, const char *buf) {
  FILE *o = e->o;
  char S = s->S;
  fprintf(o, "    for (int u = 0; u < %d; u++) {\n", s->units);
  stage_el(e, c, s, 3);
  if (!s->vec) fprintf(o, "      %c[%s][kk][rr] = r%c[u];\n", S, buf, S);
  else if (s->kfast)
    fprintf(o, "      %c[%s][kk][rr] = r%c[u].x; %c[%s][kk + 1][rr] = r%c[u].y; %c[%s][kk + 2][rr] = r%c[u].z; "
               "%c[%s][kk + 3][rr] = r%c[u].w;\n",
            S, buf, S, S, buf, S, S, buf, S, S, buf, S);
  else fprintf(o, "      TDSL_ST4(&%c[%s][kk][rr], r%c[u]);\n", S, buf, S);
  fputs("    }\n", o);
}

/* The thread's register tile is acc[q], q < TM * TN. With FMAs, q = i * TN + j is the
 * cell (row(i), col(j)) of the block's tile, row(i) = i / 4 * 64 + 4 ty + i % 4 (col
 * likewise with tx): 4 neighbouring rows (columns) are one 128-bit shared-memory read.
 * With TF32 mma, the 8 warps form a 2 x 4 grid of BM/2 x BN/4 warp tiles of m16n8
 * fragments; q = (mi * NI + ni) * 4 + r is element r of fragment (mi, ni) in the
 * accumulator layout of mma.m16n8k8: row g + 8 (r / 2), column 2 tig + r % 2 (g = lane /
 * 4, tig = lane % 4). */
static void cell_open(E *e, const Ct *c, bool mma) {
  const char *I = e->r.idx32 ? "int" : "long";
  /* Unrolled for mma: acc[] indexed by a variable would live in local memory. */
  fprintf(e->o, "%s  for (int q = 0; q < %d; q++) {\n", mma ? "#pragma unroll\n" : "", c->tm * c->tn);
  if (mma) {
    int ni = c->bn / 4 / 8;
    fprintf(e->o, "    %s m = m0 + wm * %d + q / %d * 16 + g + q %% 4 / 2 * 8, n = n0 + wn * %d + q / 4 %% %d * 8 + tig * 2 + q %% 2;\n",
            I, c->bm / 2, ni * 4, c->bn / 4, ni);
  } else
    fprintf(e->o, "    %s m = m0 + q / %d / 4 * 64 + ty * 4 + q / %d %% 4, n = n0 + q %% %d / 4 * 64 + tx * 4 + q %% 4;\n", I,
            c->tn, c->tn, c->tn);
  fprintf(e->o, "    if (m < %s && n < %s) {\n", ext_txt(e, c, R_M, ""), ext_txt(e, c, R_N, ""));
  decomp(e, c, R_M, "m", 3);
  decomp(e, c, R_N, "n", 3);
}

/* The products of reduced point kk from the staged tiles, FMAs in K order; f32 operands
 * are read 4 neighbours at a time (128-bit shared-memory loads). */
static void fma_point(E *e, const Ct *c, const char *T, const char *A, const char *B, int ind) {
  FILE *o = e->o;
  cu_indent(e, ind);
  fprintf(o, "%s a[%d], b[%d];\n", T, c->tm, c->tn);
  if (T[0] == 'f') {
    for (int x = 0; x < 2; x++) {
      cu_indent(e, ind);
      fprintf(o, "for (int i = 0; i < %d; i++) {\n", (x ? c->tn : c->tm) / 4);
      cu_indent(e, ind + 1);
      fprintf(o, "float4 v = TDSL_LD4(&%s[kk][i * 64 + %s * 4]);\n", x ? B : A, x ? "tx" : "ty");
      cu_indent(e, ind + 1);
      fprintf(o, "%c[4 * i] = v.x; %c[4 * i + 1] = v.y; %c[4 * i + 2] = v.z; %c[4 * i + 3] = v.w;\n", "ab"[x], "ab"[x],
              "ab"[x], "ab"[x]);
      cu_indent(e, ind);
      fputs("}\n", o);
    }
  } else {
    cu_indent(e, ind);
    fprintf(o, "for (int i = 0; i < %d; i++) a[i] = %s[kk][i / 4 * 64 + ty * 4 + i %% 4];\n", c->tm, A);
    cu_indent(e, ind);
    fprintf(o, "for (int j = 0; j < %d; j++) b[j] = %s[kk][j / 4 * 64 + tx * 4 + j %% 4];\n", c->tn, B);
  }
  cu_indent(e, ind);
  fprintf(o, "for (int i = 0; i < %d; i++)\n", c->tm);
  cu_indent(e, ind + 1);
  fprintf(o, "for (int j = 0; j < %d; j++) acc[i * %d + j] = acc[i * %d + j] + a[i] * b[j];\n", c->tn, c->tn, c->tn);
}

/* One step of BK reduced points from the staged tiles: FMAs in K order (a full step fully
 * unrolled, the tail step kn < BK in a loop). */
static void compute_step(E *e, const Ct *c, const char *T, const char *A, const char *B) {
  FILE *o = e->o;
  fprintf(o, "    if (kn == %d) {\n#pragma unroll\n      for (int kk = 0; kk < %d; kk++) {\n", c->bk, c->bk);
  fma_point(e, c, T, A, B, 4);
  fputs("      }\n    } else {\n      for (int kk = 0; kk < kn; kk++) {\n", o);
  fma_point(e, c, T, A, B, 4);
  fputs("      }\n    }\n", o);
}

/* Split-K when the tiles are too few to fill a large GPU (two blocks per SM of an
 * H100) and the reduction is long: each split sums a chunk into scratch memory, a
 * second kernel adds the chunks to the cells (reassociated, like split reductions). */
enum { SPLITK_MIN_BLOCKS = 264, SPLITK_MIN_CHUNK = 512 };
static const long SPLITK_MAX_SCRATCH = 1L << 28;

/* Split-K over a dynamic K: the chunk kc each split sums is computed at launch, at least
 * SPLITK_MIN_CHUNK (a multiple of BK) so that a short K is summed by few splits; the
 * splits past K do nothing, and ns of them have partial sums. One split (K <= the
 * minimum chunk) adds into the cells itself, in the CPU's order, and the combine does
 * nothing. */
static void split_chunk(E *e, const Ct *c) {
  fprintf(e->o, "  long kc = (eK + %ld - 1) / %ld;\n  kc = kc < %d ? %d : (kc + %d) / %d * %d;\n  long ns = (eK + kc - 1) / kc;\n",
          c->splits, c->splits, SPLITK_MIN_CHUNK, SPLITK_MIN_CHUNK, c->bk - 1, c->bk, c->bk);
}

/* This block's split (ks) and reduced points [kbeg, kend); a split's kc is a multiple of
 * BK. Over a dynamic K the splits past K return (the combine reads only ns of them). */
static void split_range(E *e, const Ct *c, const char *I, long K) {
  FILE *o = e->o;
  if (c->splits > 1 && c->dext[R_K]) {
    split_chunk(e, c);
    fprintf(o, "  long ks = bl %% %ld;\n  bl /= %ld;\n  long kbeg = ks * kc, kend = kbeg + kc < eK ? kbeg + kc : eK;\n"
               "  if (ks >= ns) return; /* past K: the combine reads only ns splits */\n",
            c->splits, c->splits);
  } else if (c->splits > 1)
    fprintf(o, "  %s ks = bl %% %ld;\n  bl /= %ld;\n  %s kbeg = ks * %ld, kend = kbeg + %ld < %ld ? kbeg + %ld : %ld;\n", I,
            c->splits, c->splits, I, c->kc, c->kc, K, c->kc, K);
  else fprintf(o, "  %s kbeg = 0, kend = %s;\n", I, ext_txt(e, c, R_K, ""));
}

const char *cu_ct_splits(const E *e, const Ct *c) {
  if (c->splits < 2) return "";
  if (c->dext[R_K]) return arena_printf(e->a, ", split-K up to %ld, chunks of >= %d", c->splits, SPLITK_MIN_CHUNK);
  return arena_printf(e->a, ", split-K %ld x %ld", c->splits, c->kc);
}

/* Split-K, second kernel: one thread per cell adds the splits' partial sums, in order,
 * to the cell. */
static void emit_split_combine(E *e, const char *what, const Ct *c, const Stmt *st) {
  FILE *o = e->o;
  long M = c->ext[R_M], N = c->ext[R_N], B = c->ext[R_BATCH];
  cu_begin_args(e);
  cu_use_access(e, &st->dst, true);
  const IrProd *kd = ir_prod_at(e->m, c->dext[R_K]); /* a dynamic K: its dims, for ns */
  for (int i = 0; kd && i < kd->n; i++) e->dim[kd->dims[i]] = true;
  CudaKernel *k = cu_finish_kernel(e, true);
  k->threads = B * M * N;
  cu_kernel_head(e, k, arena_printf(e->a, "%s: contraction, split-K combine of %s%ld", what, c->dext[R_K] ? "up to " : "",
                                    c->splits));
  fprintf(o, "  long n = t %% %ldL, m = t / %ldL %% %ldL, bt = t / %ldL, bl = bt;\n", N, N, M, N * M);
  cu_decompose(e, c->chain, c->n, c->role, R_BATCH, "bl", 1);
  decomp(e, c, R_M, "m", 1);
  decomp(e, c, R_N, "n", 1);
  if (c->dext[R_K]) {
    dyn_extents(e, c);
    split_chunk(e, c);
    fputs("  if (ns < 2) return; /* one split wrote the cells */\n", o);
  }
  fprintf(o, "  %s v = ", cu_ctype(cu_buf(e, st->dst.buf)->elem));
  if (c->fresh) fputc('0', o);
  else cr_access(&e->r, &st->dst);
  fprintf(o, ";\n  for (long s = 0; s < %s; s++) v = v + xs[((s * %ldL + bt) * %ldL + m) * %ldL + n];\n  ",
          c->dext[R_K] ? "ns" : arena_printf(e->a, "%ldL", c->splits), B, M, N);
  cr_access(&e->r, &st->dst);
  fputs(" = v;\n", o);
  cu_kernel_tail(e, k);
}

/* Which tile a block computes. Consecutive blocks walk the N tiles of a group of up to 8
 * M tiles (column-major within the group), so the blocks resident together share A's
 * rows and B's columns in L2. */
static void tile_index(E *e, const Ct *c, long nbm, long nbn) {
  const char *I = e->r.idx32 ? "int" : "long";
  FILE *o = e->o;
  /* Over a dynamic M or N, the tile counts are computed at launch. */
  const char *tm = arena_printf(e->a, "%ld", nbm), *tiles = arena_printf(e->a, "%ld", nbm * nbn),
             *group = arena_printf(e->a, "%ld", 8 * nbn);
  if (c->dext[R_M] || c->dext[R_N]) {
    fprintf(o, "  long nbm = %s, nbn = %s;\n", c->dext[R_M] ? arena_printf(e->a, "(eM + %d) / %d", c->bm - 1, c->bm) : tm,
            c->dext[R_N] ? arena_printf(e->a, "(eN + %d) / %d", c->bn - 1, c->bn) : arena_printf(e->a, "%ld", nbn));
    tm = "nbm", tiles = "(nbm * nbn)", group = "(8 * nbn)";
  }
  fprintf(o, "  %s bt = bl / %s, tl = bl %% %s;\n", I, tiles, tiles);
  fprintf(o, "  %s gm = tl / %s * 8, gs = %s - gm < 8 ? %s - gm : 8;\n", I, group, tm, tm);
  fprintf(o, "  %s m0 = (gm + tl %% %s %% gs) * %d, n0 = tl %% %s / gs * %d;\n", I, group, c->bm, group, c->bn);
  fputs("  bl = bt;\n", o);
}

/* The contraction's grid: BATCH x tiles x splits blocks; over dynamic roles, the batch's
 * dims and ceil(M / BM), ceil(N / BN) are factors the runtime computes at launch. */
static void grid(E *e, const Ct *c, CudaKernel *k, long nbm, long nbn) {
  k->threads = c->ext[R_BATCH] * (c->dext[R_M] ? 1 : nbm) * (c->dext[R_N] ? 1 : nbn) * c->splits * CUDA_BLOCK;
  cu_threads_times(e, k, c->dext[R_BATCH]);
  k->ceils = ANEWN(e->a, CudaCeil, 2);
  for (int r = R_M; r <= R_N; r++) {
    const IrProd *x = ir_prod_at(e->m, c->dext[r]);
    if (x) k->ceils[k->nceils++] = (CudaCeil){c->ext[r], r == R_M ? c->bm : c->bn, x->n, x->dims};
  }
}

/* ---- what cuda_mma.c's TF32 kernel shares ---- */

bool cu_ct_affine(const Ct *c, const Access *x, int ro, char S, long *sr, long *sk) {
  if (c->dyn) return false;
  for (int g = 0; c->guard && g < c->guard->nguards; g++)
    if (c->gside[g] == S) return false;
  int nr = 0, nk = 0, vr = -1, vk = -1;
  for (int i = 0; i < c->n; i++) {
    if (c->role[i] == ro) nr++, vr = c->chain[i]->var;
    if (c->role[i] == R_K) nk++, vk = c->chain[i]->var;
  }
  if (nr != 1 || nk != 1) return false;
  for (int i = 0; i < x->flat.n; i++)
    if (x->flat.t[i].dyn) return false;
  *sr = coef_of(&x->flat, vr);
  *sk = coef_of(&x->flat, vk);
  return true;
}

void cu_ct_decomp(E *e, const Ct *c, int role, const char *lin, int ind) { decomp(e, c, role, lin, ind); }
void cu_ct_stage_guard(E *e, const Ct *c, char S) { stage_guard(e, c, S); }
const char *cu_ct_ext(const E *e, const Ct *c, int role) { return ext_txt(e, c, role, ""); }
const char *cu_ct_what(const E *e, const Ct *c, int role) { return ext_what(e, c, role); }

CudaKernel *cu_ct_kernel(E *e, const Ct *c, const Stmt *st) {
  long nbn = (c->ext[R_N] + c->bn - 1) / c->bn, nbm = (c->ext[R_M] + c->bm - 1) / c->bm;
  cu_begin_args(e);
  cu_use_stmt(e, c->chain[0]);
  /* The partial sums go to the scratch buffer; over a dynamic K, one split writes the
   * cells themselves. */
  if (c->splits > 1 && !c->dext[R_K]) e->arg[st->dst.buf] = 0;
  CudaKernel *k = cu_finish_kernel(e, c->splits > 1);
  k->coop = true;
  grid(e, c, k, nbm, nbn);
  return k;
}

/* Accumulators from 0: the TF32 kernel adds a cell's value after its products
 * (cu_ct_block_end), without the registers to address the cells twice. */
void cu_ct_block_start(E *e, const Ct *c, const Stmt *st) {
  FILE *o = e->o;
  const char *I = e->r.idx32 ? "int" : "long";
  long nbn = (c->ext[R_N] + c->bn - 1) / c->bn, nbm = (c->ext[R_M] + c->bm - 1) / c->bm, K = c->ext[R_K];
  fprintf(o, "  %s bl = blockIdx.x;\n", I);
  dyn_extents(e, c);
  split_range(e, c, I, K);
  tile_index(e, c, nbm, nbn);
  cu_decompose(e, c->chain, c->n, c->role, R_BATCH, "bl", 1);
  fprintf(o, "  %s acc[%d];\n  for (int q = 0; q < %d; q++) acc[q] = 0;\n", cu_ctype(cu_buf(e, st->dst.buf)->elem),
          c->tm * c->tn, c->tm * c->tn);
}

/* A cell from acc[q], after the cell's own value unless the fill was taken. */
static void store_cell(E *e, const Ct *c, const Stmt *st) {
  cr_access(&e->r, &st->dst);
  fputs(" = ", e->o);
  if (!c->fresh) {
    cr_access(&e->r, &st->dst);
    fputs(" + ", e->o);
  }
  fputs("acc[q];\n", e->o);
}

void cu_ct_block_end(E *e, const char *what, const Ct *c, const Stmt *st, CudaKernel *k) {
  FILE *o = e->o;
  cell_open(e, c, true);
  if (c->splits > 1) {
    if (c->dext[R_K]) fputs("      if (ns > 1)\n  ", o);
    fprintf(o, "      xs[((ks * %ldL + bt) * %ldL + m) * %ldL + n] = acc[q];\n", c->ext[R_BATCH], c->ext[R_M], c->ext[R_N]);
    if (c->dext[R_K]) {
      fputs("      else\n        ", o);
      store_cell(e, c, st);
    }
  } else {
    fputs("      ", o);
    store_cell(e, c, st);
  }
  fputs("    }\n  }\n", o);
  cu_kernel_tail(e, k);
  if (c->splits > 1) emit_split_combine(e, what, c, st);
}

static void emit_contraction(E *e, const char *what, Ct *c, const Stmt *st, bool f32) {
  FILE *o = e->o;
  if (e->tf32 && f32) {
    cu_mma_contraction(e, what, c, st);
    return;
  }
  const char *T = f32 ? "float" : "double";
  bool split = c->splits > 1;
  long nbn = (c->ext[R_N] + c->bn - 1) / c->bn, nbm = (c->ext[R_M] + c->bm - 1) / c->bm, K = c->ext[R_K];
  cu_begin_args(e);
  cu_use_stmt(e, c->chain[0]);
  if (split && !c->dext[R_K]) e->arg[st->dst.buf] = 0; /* the partial sums go to the scratch buffer */
  CudaKernel *k = cu_finish_kernel(e, split);
  k->coop = true;
  grid(e, c, k, nbm, nbn);
  /* Two blocks per SM hide the shared-memory latency better than the registers a
   * 128 x 128 fp32 tile could use beyond 128 per thread. */
  if (f32 && c->bm == 128) k->min_blocks = 2;
  cu_kernel_sig(e, k, arena_printf(e->a, "%s: contraction, %s x %s x %s (batch %s), %dx%d tiles%s%s", what, ext_what(e, c, R_M),
                                    ext_what(e, c, R_N), ext_what(e, c, R_K), ext_what(e, c, R_BATCH), c->bm, c->bn,
                                    cu_ct_splits(e, c), c->fresh ? ", from 0 (fill taken)" : ""));
  const char *I = e->r.idx32 ? "int" : "long";
  /* Two buffers of each tile. Rows of BM + 4 (BN + 8) keep 128-bit reads aligned. */
  fprintf(o, "  __shared__ TDSL_ALIGN16 %s A[2][%d][%d];\n  __shared__ TDSL_ALIGN16 %s B[2][%d][%d];\n", T, c->bk, c->bm + 4, T,
          c->bk, c->bn + 8);
  fputs("  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;\n", o);
  fprintf(o, "  %s bl = blockIdx.x;\n", I);
  dyn_extents(e, c);
  split_range(e, c, I, K);
  tile_index(e, c, nbm, nbn);
  cu_decompose(e, c->chain, c->n, c->role, R_BATCH, "bl", 1);
  fprintf(o, "  %s acc[%d];\n", T, c->tm * c->tn);
  bool one = split && c->dext[R_K] && !c->fresh; /* ns == 1 starts from the cells */
  if (split || c->fresh) fprintf(o, "  for (int q = 0; q < %d; q++) acc[q] = 0;\n", c->tm * c->tn);
  if (one) fputs("  if (ns == 1)\n", o);
  if (!(split || c->fresh) || one) {
    cell_open(e, c, false);
    fputs("      acc[q] = ", o);
    cr_access(&e->r, &st->dst);
    fprintf(o, ";\n    } else acc[q] = 0;\n  }\n");
  }
  Stage sa = stage_of(c, c->a, 'A', R_M, c->a_kfast, c->vec_a), sb = stage_of(c, c->b, 'B', R_N, !c->b_nfast, c->vec_b);
  fprintf(o, "  %s rA[%d];\n  %s rB[%d];\n  int buf = 0;\n  {\n    %s k0 = kbeg;\n", sa.vec ? "float4" : T, sa.units,
          sb.vec ? "float4" : T, sb.units, I);
  stage_load(e, c, &sa, T, "k0");
  stage_load(e, c, &sb, T, "k0");
  stage_store(e, c, &sa, "0");
  stage_store(e, c, &sb, "0");
  fprintf(o, "  }\n  __syncthreads();\n  for (%s k0 = kbeg; k0 < kend; k0 += %d, buf ^= 1) {\n", I, c->bk);
  fprintf(o, "    int more = k0 + %d < kend;\n    if (more) {\n      %s k1 = k0 + %d;\n", c->bk, I, c->bk);
  stage_load(e, c, &sa, T, "k1");
  stage_load(e, c, &sb, T, "k1");
  fprintf(o, "    }\n    int kn = kend - k0 < %d ? (int)(kend - k0) : %d;\n", c->bk, c->bk);
  compute_step(e, c, T, "A[buf]", "B[buf]");
  fputs("    if (more) {\n", o);
  stage_store(e, c, &sa, "buf ^ 1");
  stage_store(e, c, &sb, "buf ^ 1");
  fputs("    }\n    __syncthreads();\n  }\n", o);
  cell_open(e, c, false);
  if (split) {
    if (c->dext[R_K]) fputs("      if (ns > 1)\n  ", o);
    fprintf(o, "      xs[((ks * %ldL + bt) * %ldL + m) * %ldL + n] = acc[q];\n", c->ext[R_BATCH], c->ext[R_M], c->ext[R_N]);
    if (c->dext[R_K]) {
      fputs("      else\n        ", o);
      cr_access(&e->r, &st->dst);
      fputs(" = acc[q];\n", o);
    }
    fputs("    }\n  }\n", o);
  } else {
    fputs("      ", o);
    cr_access(&e->r, &st->dst);
    fputs(" = acc[q];\n    }\n  }\n", o);
  }
  cu_kernel_tail(e, k);
  if (split) emit_split_combine(e, what, c, st);
}


static void choose_split(E *e, Ct *c, long blocks, Elem el) {
  long K = c->ext[R_K];
  c->splits = 1;
  c->kc = K;
  if (e->strict) return; /* the splits' partial sums are added apart: reassociated */
  /* The scratch memory is sized at compile time: a dynamic output is not split. */
  if (blocks >= SPLITK_MIN_BLOCKS || c->dext[R_BATCH] || c->dext[R_M] || c->dext[R_N]) return;
  long s = (SPLITK_MIN_BLOCKS + blocks - 1) / blocks, kc = 0;
  /* Over a dynamic K, as many splits as fill the GPU; the chunk (split_chunk) adapts at
   * launch, so a short K uses few of them. */
  if (!c->dext[R_K]) {
    if (K < 2 * SPLITK_MIN_CHUNK) return;
    if (s > K / SPLITK_MIN_CHUNK) s = K / SPLITK_MIN_CHUNK;
    kc = (K + s - 1) / s;
    kc = (kc + c->bk - 1) / c->bk * c->bk;
    s = (K + kc - 1) / kc;
  }
  long bytes = s * c->ext[R_BATCH] * c->ext[R_M] * c->ext[R_N] * (el == ELEM_F64 ? 8 : 4);
  if (s < 2 || bytes > SPLITK_MAX_SCRATCH) return;
  c->splits = s;
  c->kc = kc;
  e->scratch_elem = el;
  if (bytes > e->scratch) e->scratch = bytes;
}

static bool covers_buffer(const E *e, const Ct *c, const Access *dst) {
  bool in_cell[64];
  for (int i = 0; i < c->n; i++) in_cell[i] = c->role[i] != R_K && c->role[i] != R_NONE;
  return cu_covers(e, c->chain, c->n, in_cell, dst);
}

/* The fill of 0 is this contraction's destination, which it writes whole and does not
 * read otherwise: the cells can start from 0 and the fill go. */
static bool can_take(const E *e, const Ct *c, const Stmt *st, const Stmt *f) {
  return f && f->buf == st->dst.buf && c->a->buf != f->buf && c->b->buf != f->buf && covers_buffer(e, c, &st->dst);
}

bool cu_contraction_takes(E *e, const Stmt **chain, int n, const int *par, const Stmt *st, const Stmt *fill) {
  Ct c = {0};
  return recognize(e, &c, chain, n, par, st) && can_take(e, &c, st, fill);
}

bool cu_contraction(E *e, const char *what, const Stmt **chain, int n, const int *par, const Stmt *st) {
  Ct c = {0};
  if (!recognize(e, &c, chain, n, par, st)) return false;
  shape(e, &c);
  long blocks = mul_sat(c.guess[R_BATCH], mul_sat((c.guess[R_M] + c.bm - 1) / c.bm, (c.guess[R_N] + c.bn - 1) / c.bn));
  if (blocks > 0x7fffffffL) return false; /* over dynamic sizes, the runtime checks at launch */
  if (can_take(e, &c, st, e->pending_fill)) { /* planned by cu_contraction_takes */
    c.fresh = true;
    e->pending_fill = NULL;
  }
  bool f32 = cu_buf(e, st->dst.buf)->elem == ELEM_F32;
  choose_split(e, &c, blocks, cu_buf(e, st->dst.buf)->elem);
  blocks = mul_sat(blocks, c.splits);
  e->r.idx32 = !c.dyn && blocks < (1L << 30) && c.ext[R_M] + c.bm < (1L << 30) && c.ext[R_N] + c.bn < (1L << 30) &&
               c.ext[R_K] + c.bk < (1L << 30) && aff_fits_int(e, &c.a->flat, chain, n) &&
               aff_fits_int(e, &c.b->flat, chain, n) && aff_fits_int(e, &st->dst.flat, chain, n);
  emit_contraction(e, what, &c, st, f32);
  e->r.idx32 = false;
  return true;
}

/* ---- reductions: one block per point ---- */

/* Every load moves by 0 or 1 cell along var, and some load moves: the threads of a
 * block striding over var read neighbouring cells. -1 when a load strides. */
int cu_loads_along(const IrExpr *x, int var) {
  if (x->kind == X_LOAD) {
    long c = labs(coef_of(&x->acc.flat, var));
    return c > 1 ? -1 : (int)c;
  }
  if (x->kind != X_OP) return 0;
  int any = 0;
  for (int i = 0; i < op_info[x->op].arity; i++) {
    int r = cu_loads_along(x->a[i], var);
    if (r < 0) return -1;
    any |= r;
  }
  return any;
}

/* A block per point pays when the point has many reduced points; with many points of
 * few each, one thread per point already fills the GPU. */
enum { BLOCKRED_MIN_RED = 256, BLOCKRED_MIN_POINTS = 128, BLOCKRED_LONG_RED = 2048, BLOCKRED_MANY_POINTS = 65536 };

bool cu_block_reduction(E *e, const char *what, const Stmt **chain, int n, const int *par, const Stmt *st,
                        const RedSize *z) {
  int inner = -1;
  for (int i = 0; i < n; i++)
    if (par[i] == SEQ) inner = chain[i]->var;
  long points = z->gpoints, red = z->gred; /* over dynamic sizes the runtime checks the grid */
  if (red < BLOCKRED_MIN_RED || points < BLOCKRED_MIN_POINTS || points > 0x7fffffffL || inner < 0 ||
      (red < BLOCKRED_LONG_RED && points > BLOCKRED_MANY_POINTS) ||
      cu_loads_along(st->val, inner) != 1)
    return false;
  FILE *o = e->o;
  bool f32 = cu_buf(e, st->dst.buf)->elem == ELEM_F32;
  const char *T = f32 ? "float" : "double";
  cu_begin_args(e);
  cu_use_stmt(e, chain[0]);
  CudaKernel *k = cu_finish_kernel(e, false);
  k->coop = true;
  k->threads = z->points * CUDA_BLOCK;
  cu_threads_times(e, k, z->pdext);
  cu_kernel_sig(e, k, arena_printf(e->a, "%s: block reduction, %s points of %s", what, cu_ext_what(e, z->points, z->pdext),
                                    cu_ext_what(e, z->red, z->rdext)));
  fprintf(o, "  __shared__ %s part[%d];\n  long t = blockIdx.x;\n", T, CUDA_BLOCK / 32);
  cu_decompose(e, chain, n, par, PAR, "t", 1);
  cu_strided_fold(e, chain, n, par, st, z, "threadIdx.x", arena_printf(e->a, "%d", CUDA_BLOCK), NULL);
  /* Lane 0 of each warp gets its warp's value, warp 0 combines the warps'. */
  const char *shfl = arena_printf(e->a, "(%s)TDSL_SHFL_DOWN(acc, d)", T);
  fputs("  for (int d = 16; d > 0; d /= 2) acc = ", o);
  cr_accum(&e->r, st->accum, f32, "acc", NULL, shfl);
  fputs(";\n  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = acc;\n  __syncthreads();\n", o);
  fprintf(o, "  if (threadIdx.x >= 32) return;\n  acc = threadIdx.x < %d ? part[threadIdx.x] : ", CUDA_BLOCK / 32);
  cr_const(o, op_neutral(st->accum), f32);
  fputs(";\n  for (int d = 16; d > 0; d /= 2) acc = ", o);
  cr_accum(&e->r, st->accum, f32, "acc", NULL, shfl);
  fprintf(o, ";\n  if (threadIdx.x == 0) {\n    %s old = ", T);
  cr_access(&e->r, &st->dst);
  fputs(";\n    ", o);
  cr_access(&e->r, &st->dst);
  fputs(" = ", o);
  cr_accum(&e->r, st->accum, f32, "old", NULL, "acc");
  fputs(";\n  }\n", o);
  cu_kernel_tail(e, k);
  return true;
}
