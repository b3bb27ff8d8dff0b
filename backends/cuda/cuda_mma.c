/* cuda_mma.c: fp32 contractions on TF32 tensor cores (--tf32, sm_80 and later).
 *
 * The block plan is cuda_tile.c's (BM x BN tiles of 256 threads, the grouped tile order,
 * split-K), with BK = 32. The 8 warps form a 2 x 4 grid of BM/2 x BN/4 warp tiles of
 * mma.sync m16n8k8 fragments accumulating in fp32 from 0, a cell's value added after its
 * products; like PyTorch's allow_tf32, results differ from fp32 by TF32's 10-bit mantissa.
 * Tiles and registers: 128 x 256 (64 x 64 per warp, 128 accumulators, one block per SM)
 * when there are blocks for two waves, since a warp tile's shared-memory reads per mma
 * halve from 64 x 32 to 64 x 64, and shared memory, not the tensor cores, bounds the
 * smaller tiles; 128 x 128 capped at 128 registers (two blocks per SM); 64 x 64 at 85
 * (three blocks of 48 KB; uncapped, ptxas chose 64 and spilled). The copy loops stay
 * rolled and shared memory is addressed by 32-bit offsets from the one array (with
 * 64-bit pointers into it, NVRTC's code spilled).
 *
 * Staging: cp.async copies the operand tiles from global memory straight into shared
 * memory, MMA_STAGES steps deep (two steps in flight while one is multiplied, one barrier
 * per step), in dynamic shared memory (96 KB for 128 x 128 tiles, 144 KB for 128 x 256:
 * over the 48 KB a kernel's static shared memory may take). A cell out of range or in
 * the padding is copied as 0 (a copy of 0 source bytes zero-fills): the tail step
 * multiplies zeros. The fragments are rounded to TF32 (cvt.rna: a compare, an add and a
 * mask) in registers after their loads: a pass over shared memory that rounded each
 * element once cost as many shared-memory cycles as the copies and half the fragment
 * loads, and shared memory is what bounds the kernel.
 *
 * Fragments: slice s (8 reduced points) of a step is points 8 s .. 8 s + 7 in the mma's
 * k order. Shared layouts of an operand tile (banks: 32 of 4 bytes; a 16-byte chunk is
 * 4 banks, 8 chunks the 128-byte line one pass of shared memory serves):
 * - K-major, [rows][32], for an operand copied along K (16-byte chunks when aligned, else
 *   element by element): chunk c of row r is stored at chunk c ^ (r & 7). Fragments come
 *   by ldmatrix (.x4, b16 pairs: a 32-bit element per lane, lane 4 g + t getting word t of
 *   row g of each 8 x 16-byte matrix), which is exactly the A (a0..a3: rows g, g + 8 by
 *   words t, t + 4) and B (b0, b1: column g by words t, t + 4) layouts of m16n8k8 TF32;
 *   the 8 rows of a matrix lie in 8 distinct chunks: no conflict, and the four registers
 *   arrive as the mma takes them (the 128-bit loads of two rows they replace needed moves).
 * - row-major, [32][rows], for an operand copied in 16-byte chunks along its rows (M, N):
 *   chunk c of k row k is stored at chunk c ^ (k & 3) << 1; 32-bit loads: lane (g, t)
 *   reads row r0 + g (r0 a multiple of 8) of k row 8 s + t (+ 4): chunk (r0 / 4 + g / 4) ^
 *   2t, 8 distinct chunks modulo 8, times r % 4 = g % 4: 32 distinct banks.
 * The copies write, per 8 lanes, 8 chunks of one row's line (K-major) or 8 neighbouring
 * chunks permuted within their line (row-major): no conflict either. */
#include "cuda_tile.h"

/* One operand's staging. */
typedef struct Op {
  const Access *x;
  int ro, rows;  /* R_M or R_N; rows of the tile */
  int off;       /* of the tile in a stage, in 4-byte words */
  bool kmaj;     /* [rows][BK] (else [BK][rows]) */
  bool vec;      /* 16-byte copies along the contiguous axis */
  bool xk;       /* the operand is contiguous along K (else along its rows) */
  char S;        /* 'A' or 'B': the guards tested when staging it */
  int units;     /* copies per thread per step */
  bool fast;     /* whole tiles read affinely: copy u of a step reads g<S> + du * u + the
                    step's offset (no guard, no index arithmetic per copy) */
  long sk, du;   /* the source's stride per reduced point, per copy */
} Op;

/* A tile's copies can be addressed from one pointer when every step copies whole tiles
 * (the tile's rows and BK divide the extents, so no copy is out of range) of an operand
 * read affinely: the copy loop then unrolls to one cp.async per copy, where the guarded
 * loop spends ~30 instructions per copy on indices (as many as the step's mma work). */
static Op op_of(const Ct *c, const Access *x, char S, int ro, bool xk, bool vec, int off) {
  Op p = {x, ro, ro == R_M ? c->bm : c->bn, off, vec ? xk : true, vec, xk, S, 0, false, 0, 0};
  int w = vec ? 4 : 1;
  p.units = p.rows * MMA_BK / CUDA_BLOCK / w;
  long sr;
  p.fast = c->ext[ro] % p.rows == 0 && c->ext[R_K] % MMA_BK == 0 && cu_ct_affine(c, x, ro, S, &sr, &p.sk);
  /* Copy u: rows 8w u further (along K: el / (BK / w)), or points 256 w / rows further. */
  p.du = xk ? CUDA_BLOCK / (MMA_BK / w) * sr : CUDA_BLOCK / (p.rows / w) * p.sk;
  return p;
}

/* The element (rr, kk) of copy u of this thread, consecutive threads along the operand's
 * contiguous axis (coalesced). */
static void op_rk(E *e, const Op *p) {
  int w = p->vec ? 4 : 1;
  if (p->xk)
    fprintf(e->o, "      int el = threadIdx.x + %d * u, rr = el / %d, kk = el %% %d * %d;\n", CUDA_BLOCK, MMA_BK / w,
            MMA_BK / w, w);
  else
    fprintf(e->o, "      int el = threadIdx.x + %d * u, kk = el / %d, rr = el %% %d * %d;\n", CUDA_BLOCK, p->rows / w,
            p->rows / w, w);
}

/* The word of (rr, kk) in the stage st: "sw". */
static void op_sw(E *e, const Op *p, const char *st) {
  if (p->kmaj) fprintf(e->o, "      unsigned *sw = &sm[%s + %d + tdsl_swz_k(rr, kk)];\n", st, p->off);
  else fprintf(e->o, "      unsigned *sw = &sm[%s + %d + tdsl_swz_r(rr, kk, %d)];\n", st, p->off, p->rows);
}

/* Declares the operand's element (rr + m0 or n0, kk + kbeg) as the loops of its roles. */
static void op_decomp(E *e, const Ct *c, const Op *p, const char *k0) {
  const char *I = e->r.idx32 ? "int" : "long";
  fprintf(e->o, "      %s r = %s + rr, k = %s + kk;\n", I, p->ro == R_M ? "m0" : "n0", k0);
  cu_ct_decomp(e, c, p->ro, "r", 4);
  cu_ct_decomp(e, c, R_K, "k", 4);
}

/* The fast operand's pointer: this thread's first copy of the first step. */
static void op_base(E *e, const Ct *c, const Op *p) {
  if (!p->fast) return;
  fprintf(e->o, "  const float *g%c;\n  {\n      const int u = 0;\n", p->S);
  op_rk(e, p);
  op_decomp(e, c, p, "kbeg");
  fprintf(e->o, "      g%c = &", p->S);
  cr_access(&e->r, p->x);
  fputs(";\n  }\n", e->o);
}

/* The copies of one step of the operand (reduced points from k0) into stage st. */
static void op_issue(E *e, const Ct *c, const Op *p, const char *st) {
  FILE *o = e->o;
  int nb = p->vec ? 16 : 4;
  if (p->fast) {
    /* Unrolled, but for 128 x 128 tiles, whose 128 registers it would overrun (spills). */
    fprintf(o, "    const float *s%c = g%c + (long)(k0 - kbeg) * %ldL;\n#pragma unroll%s\n    for (int u = 0; u < %d; u++) {\n",
            p->S, p->S, p->sk, c->bm == 128 && c->bn == 128 ? " 1" : "", p->units);
    op_rk(e, p);
    op_sw(e, p, st);
    fprintf(o, "      tdsl_cp%d(sw, s%c + u * %ldL, %d);\n    }\n", nb, p->S, p->du, nb);
    return;
  }
  fprintf(o, "#pragma unroll 1\n    for (int u = 0; u < %d; u++) {\n", p->units);
  op_rk(e, p);
  op_sw(e, p, st);
  op_decomp(e, c, p, "k0");
  fprintf(o, "      const float *src = b%d;\n      int nb = 0;\n", p->x->buf);
  fprintf(o, "      if (r < %s && k < %s) {\n", cu_ct_ext(e, c, p->ro), cu_ct_ext(e, c, R_K));
  cu_ct_stage_guard(e, c, p->S);
  fputs("        { src = &", o);
  cr_access(&e->r, p->x);
  fprintf(o, "; nb = %d; }\n      }\n      tdsl_cp%d(sw, src, nb);\n    }\n", nb, nb);
}


/* Half h of the step (slices 2h and 2h + 1) from the stage at sA, sB. The fragments of B
 * are loaded first, bf[j][2 s' + reg] (b0, b1 of slice 2h + s' of the warp's j-th 8
 * columns), then per 16 rows i of the warp's A af[4 s' + reg] (a0..a3), multiplied at
 * once: only one row block's A fragments are live (registers: with 128 x 128 tiles two
 * blocks per SM allow 128 per thread, 64 of them the accumulators). */
static void mma_half(E *e, const Ct *c, const Op *pa, const Op *pb) {
  FILE *o = e->o;
  int mi = c->bm / 2 / 16, ni = c->bn / 4 / 8;
  fprintf(o, "      unsigned bf[%d][4];\n", ni);
  fprintf(o, "#pragma unroll\n      for (int j = 0; j < %d; j++) {\n        int cn = wn * %d + j * 8;\n", ni, c->bn / 4);
  /* Matrix q = lane / 8: chunk 4h + q, i.e. words t (b0) and t + 4 (b1) of slice 2h, then of 2h + 1. */
  if (pb->kmaj) fputs("        tdsl_ldm4(bf[j], &sm[sB + tdsl_swz_k(cn + (lane & 7), 16 * h + (lane >> 3) * 4)]);\n", o);
  else
    fprintf(o, "#pragma unroll\n        for (int q = 0; q < 4; q++) bf[j][q] = sm[sB + tdsl_swz_r(cn + g, 16 * h + 4 * q + tig, %d)];\n",
            c->bn);
  fputs("#pragma unroll\n        for (int q = 0; q < 4; q++) bf[j][q] = tdsl_tf32u(bf[j][q]);\n      }\n", o);
  fprintf(o, "#pragma unroll\n      for (int i = 0; i < %d; i++) {\n        int r = wm * %d + i * 16;\n        unsigned af[8];\n", mi,
          c->bm / 2);
  /* Matrix q = lane / 8: rows r + 8 (q & 1), chunk 4h + 2s' + q / 2: a0..a3 of slice 2h + s'. */
  if (pa->kmaj)
    fputs("#pragma unroll\n        for (int s = 0; s < 2; s++)\n"
          "          tdsl_ldm4(&af[4 * s], &sm[sA + tdsl_swz_k(r + (lane & 15), 16 * h + 8 * s + (lane >> 4) * 4)]);\n",
          o);
  else
    fprintf(o, "#pragma unroll\n        for (int q = 0; q < 8; q++) af[q] = sm[sA + tdsl_swz_r(r + g + 8 * (q & 1), 16 * h + 4 * (q >> 1) + tig, %d)];\n",
            c->bm);
  fprintf(o, "#pragma unroll\n        for (int q = 0; q < 8; q++) af[q] = tdsl_tf32u(af[q]);\n"
             "#pragma unroll\n        for (int s = 0; s < 2; s++)\n#pragma unroll\n"
             "          for (int j = 0; j < %d; j++) tdsl_mma_tf32(&acc[(i * %d + j) * 4], &af[4 * s], &bf[j][2 * s]);\n"
             "      }\n",
          ni, ni);
}

/* The products of the step in stage st: its two halves. */
static void mma_step(E *e, const Ct *c, const Op *pa, const Op *pb) {
  fprintf(e->o, "    int sA = st + %d, sB = st + %d;\n#pragma unroll\n    for (int h = 0; h < %d; h++) {\n",
          pa->off, pb->off, MMA_BK / 16);
  mma_half(e, c, pa, pb);
  fputs("    }\n", e->o);
}

/* The copies of step number ks (its points from k0) into its stage, or none past the
 * last step; then the commit that makes them a group (an empty one past the last step,
 * so that "all groups but the newest" is always the step to multiply next). */
static void issue_step(E *e, const Ct *c, const Op *pa, const Op *pb, const char *ks) {
  const char *I = e->r.idx32 ? "int" : "long";
  long stage = (long)(c->bm + c->bn) * MMA_BK;
  fprintf(e->o, "  if (%s < nk) {\n    %s k0 = kbeg + (%s) * %d;\n    int st = (%s) %% %d * %ld;\n", ks, I, ks,
          MMA_BK, ks, MMA_STAGES, stage);
  op_issue(e, c, pa, "st");
  op_issue(e, c, pb, "st");
  fputs("  }\n  TDSL_CP_COMMIT();\n", e->o);
}

void cu_mma_contraction(E *e, const char *what, Ct *c, const Stmt *st) {
  FILE *o = e->o;
  long stage = (long)(c->bm + c->bn) * MMA_BK;
  CudaKernel *k = cu_ct_kernel(e, c, st);
  k->smem = (int)(stage * MMA_STAGES * 4);
  /* 128 x 256: one block per SM (144 KB of shared memory; up to 255 registers);
   * 128 x 128: two (2 x 96 KB fit an H100's 228 KB) need at most 128 registers per
   * thread; 64 x 64: three (of 48 KB). */
  k->min_blocks = c->bn == 256 ? 1 : c->bm == 128 ? 2 : 3;
  cu_kernel_sig(e, k, arena_printf(e->a, "%s: contraction, %s x %s x %s (batch %s), %dx%d tiles, TF32 mma (cp.async, %d stages of %d)%s%s",
                                    what, cu_ct_what(e, c, R_M), cu_ct_what(e, c, R_N), cu_ct_what(e, c, R_K),
                                    cu_ct_what(e, c, R_BATCH), c->bm, c->bn, MMA_STAGES, MMA_BK, cu_ct_splits(e, c),
                                    c->fresh ? ", from 0 (fill taken)" : ""));
  fprintf(o, "  TDSL_DYN_SHARED(unsigned, sm, %ld);\n", stage * MMA_STAGES);
  fputs("  int lane = threadIdx.x % 32, wm = threadIdx.x / 32 / 4, wn = threadIdx.x / 32 % 4, g = lane / 4, tig = lane % 4;\n", o);
  cu_ct_block_start(e, c, st);
  Op pa = op_of(c, c->a, 'A', R_M, c->a_kfast, c->vec_a, 0);
  Op pb = op_of(c, c->b, 'B', R_N, !c->b_nfast, c->vec_b, c->bm * MMA_BK);
  op_base(e, c, &pa);
  op_base(e, c, &pb);
  const char *I = e->r.idx32 ? "int" : "long";
  fprintf(o, "  %s nk = (kend - kbeg + %d) / %d;\n", I, MMA_BK - 1, MMA_BK);
  for (int s = 0; s < MMA_STAGES - 1; s++) issue_step(e, c, &pa, &pb, arena_printf(e->a, "%d", s));
  fprintf(o, "  for (%s kt = 0; kt < nk; kt++) {\n  TDSL_CP_WAIT(%d);\n", I, MMA_STAGES - 2);
  /* The step is visible to all, and every warp is done with the stage the next copies
   * overwrite (the one multiplied in the previous step). */
  fputs("  __syncthreads();\n", o);
  issue_step(e, c, &pa, &pb, arena_printf(e->a, "kt + %d", MMA_STAGES - 1));
  fprintf(o, "  {\n    int st = kt %% %d * %ld;\n", MMA_STAGES, stage);
  mma_step(e, c, &pa, &pb);
  fputs("  }\n  }\n", o);
  cu_ct_block_end(e, what, c, st, k);
}
