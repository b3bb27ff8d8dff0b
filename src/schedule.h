/* schedule.h: the schedule pass, between lowering (src/lower.c) and the code generators.
 *
 * Lowering gives every assignment one naive loop nest (ir.h). The schedule pass owns
 * the performance decisions for the CPU back ends (gccjit and --emit-c); the emitters
 * only render what it wrote into the IR, and --dump-ir shows it:
 *
 * - Contractions (a perfect nest whose one store is `dst =add mul(load, load)`: matmul,
 *   batched and einsum contractions, unpadded convolutions after projection, and their
 *   backward) become an S_KERNEL (ir.h) inside the remaining outer loops: BLIS-style
 *   cache blocks, packed operand panels and a register tile of MR x NR: 6 x 2 vectors
 *   (12 accumulators in the 16 ymm registers of AVX2) or, where the target has
 *   AVX-512, 12 x 2 (24 of 32 zmm registers). Packing reads the
 *   operands through their affine indices, so any constant strides work; edge tiles are
 *   zero-padded in the panels and stored cell by cell. The m dimension may be
 *   several loop variables (every target variable only A uses: a convolution's output
 *   rows and columns), packed through their mixed-radix row number. Padding guards of a
 *   padded convolution become an `if` on the outer loops and a test per row (rows that
 *   fail are packed as zeros and not updated). A guard on the n or k dimension (a padded
 *   convolution's weight gradient: the filter offsets are target variables only the input
 *   uses, the batch and spatial positions are summed) makes n every target variable
 *   only B uses and k every summed variable both use, several of each if need be, so the
 *   guard bounds one operand, whose packed cells are zero where it fails (an im2col
 *   panel, one pass over the operands instead of one per filter offset). Other summed
 *   variables that continue k in both operands' layouts (a weight gradient's batch and
 *   sequence, read as one index) join it as one linear k (KDim.linear, merge_k): one
 *   long k and one kernel call instead of a call per batch row. The register tile of a
 *   packed A is a function of its own (gcc allocates registers per function: packing
 *   code beside it had spilled a B vector in a weight gradient). With A
 *   contiguous along k and one column
 *   tile (n <= NR) or A in L1, the register tile reads A in place (Kernel.direct_a). Kept naive:
 *   guards on n without k or on m, n and k together, index symbols (bounds not static),
 *   an operand that is also the target, mixed
 *   element types, and small problems (packing would cost more than it saves).
 * - Epilogues: a kernel outside any loop followed by a pointwise nest on its result (bias
 *   + activation: each store writes the kernel's cell of another buffer, reading that cell
 *   of the result or of a buffer the nest writes) takes the nest into Kernel.epilogue,
 *   run per row block on its final cells after the last k block, while they are in L2
 *   (sched_epi.c; routine fusion moves the two next to each other).
 * - Reductions (the innermost loop of a nest whose one store adds into a cell that does
 *   not depend on that loop) get `accs` independent partial sums, so the sum runs at
 *   memory bandwidth instead of one dependent add chain; so do the inner nests of a
 *   loop that row fusion (sched_fuse.h) gave several (sched_rows).
 * - Transposes (a nest lowering tiled: tile(q) tile(p) q p, or p q; or one that moves
 *   each cell of its target once from a source of another layout): 64-byte tiles of
 *   p (the target-contiguous axis), 128-byte tiles of q (the source's), each grown into
 *   a group with the axes that continue it when it is shorter (a 16-cell axis and two
 *   cells of the next make a 128-byte tile), tile(p) and the other loops by decreasing
 *   source stride, and, when p and q are single axes, a prefetch (for
 *   writing) of the target row the next iteration of the innermost of those writes; or,
 *   when the nest overwrites a target of STREAM_MIN_BYTES or more in whole groups of a
 *   target vector (at most 64 bytes) or else of 16 bytes, stores streamed around the caches (Stmt.stream, an S_FENCE per iteration of
 *   the outermost loop) and no prefetch: a cached store reads each target line first.
 *   Other nests that only move cells into such a target (a permute whose contiguous
 *   axis stays innermost) stream too; computed values do not (built lane by lane, they
 *   would lose gcc's vectorization). Where the two innermost loops (q, p) of a retiled
 *   f32 transpose run whole blocks of a vector's lanes on an AVX target, q gets
 *   Stmt.tblock: the renderer moves a block with one vector load per source row, a
 *   register transpose and one vector store per target row (streamed where p is). A
 *   permute's gradient with its zeroing fused in (add(0, cell)) is blocked only where
 *   it streams.
 * - Fills: `fill B v` followed by a nest that accumulates into every cell of B exactly
 *   once (a permute, a pointwise `=:+`) becomes one nest overwriting B with
 *   accum(v, value): one pass instead of two, the same bits.
 * - Threads: the outer loop of a top-level nest is `parallel` when each iteration
 *   writes its own cells (its variable alone indexes an axis of the target) and reads
 *   no cell another iteration writes, and the nest has at least PAR_MIN_POINTS points;
 *   when the outer loop is a reduction into cells an inner loop picks (a column sum),
 *   a tile loop over that inner variable goes outermost and is parallel instead. A
 *   kernel outside any loop is split among threads (Kernel.parallel): by row tiles, or
 *   by column panels when it has fewer row tiles than panels. Each cell is still
 *   computed by one thread in the serial order, so results do not depend on the thread
 *   count. Reductions into one cell stay on one thread.
 * A nest over dynamic sizes (ir.h) gets only partial sums and threads (a dynamic extent
 * counts as DYN_EXT_GUESS in the thresholds, and an axis indexed through a broadcast
 * flag makes no loop parallel); the rest is planned from static sizes.
 * Kernels and partial sums reassociate sums; --strict-fp (SchedOpts.strict_fp) keeps
 * source order: only the exact rewrites (fills, threads) remain. --check-bounds keeps
 * every nest as lowered. The CUDA back end is not scheduled here (it maps nests
 * onto threads itself); it may use the contraction recognizer.
 *
 * The pass never changes its input: it returns a new module sharing the unchanged
 * statements, so the naive module stays available (tdslc --check compares the two). */
#ifndef TDSL_SCHED_H
#define TDSL_SCHED_H

#include "ir.h"

typedef struct SchedOpts {
  bool strict_fp;       /* keep source order of sums: no partial sums, no kernels */
  bool check_bounds;    /* --check-bounds: keep the naive loops, whose every access is
                         * checked (gcc 12 also rejected a kernel inlined next to checked
                         * partial sums: "iteration N invokes undefined behavior") */
  long kernel_min_work; /* contractions with fewer multiply-adds stay naive; 0: default */
  int vec_bytes;        /* the target's vector registers (bytes); 0: 32 (AVX2) */
  bool gpu;             /* routine fusion for the CUDA back end: no row fusion (a thread
                         * per row would run a whole row's passes alone) */
} SchedOpts;

/* A recognized contraction: the store of a perfect nest, the loops it sits in, and the
 * roles of their variables. */
typedef struct Contraction {
  Stmt *store;      /* dst =add mul(x, y) */
  int a_arg;        /* 0 if x is A (indexed by i), 1 if y is */
  int i, j, k;      /* loop variables of the M, N and K dimensions (the fastest of each) */
  long m, n, kext;  /* their extents (products over the variables of each) */
  int nm;           /* the M variables, slowest first (Kernel.mvar) */
  int mvar[KERN_MAX_M];
  long mext[KERN_MAX_M];
  KDim nd, kd;      /* the N and K variables (several only where a guard needs it) */
  int nouter;       /* the nest's other loops, outermost first (tile loops removed) */
  Stmt *outer[64];
  int nguards;      /* padding guards of the store: on M variables (and outer ones) */
  Guard *guards;    /* tested per row; on outer variables only, an if around */
} Contraction;

/* Recognizes a contraction in the loop nest `nest` (an S_LOOP). False when it is not
 * one or has something a kernel does not handle (a guard on j or k, symbols in an
 * index, an operand that is the target, mixed element types). */
bool sched_contraction(Stmt *nest, const IrModule *m, Contraction *out);

/* The vector width of the machine running the compiler (the JIT's target). */
int sched_host_vec_bytes(void);

/* The scheduled copy of m (arena-allocated; m is not modified). */
IrModule *sched_module(Arena *a, const IrModule *m, const SchedOpts *o);

#endif
