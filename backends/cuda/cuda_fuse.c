/* cuda_fuse.c: routines of small kernels as one kernel.
 *
 * A routine of a small model (the moons training step: some 70 loop nests over a few
 * hundred cells each) spends its time launching kernels, about a microsecond each even
 * replayed as a CUDA graph. When every kernel a routine launches (through the functions
 * it calls) runs one thread per point over few points, the routine becomes one kernel of
 * one block: each nest's per-point code runs over its points strided by the block's
 * threads, and a __syncthreads between nests orders them as the launches did (a block
 * barrier makes the block's global-memory writes visible to the block); consecutive
 * nests that share no buffer one of them writes run in one phase, without a barrier. When the buffers
 * it uses fit in shared memory, they are copied there first and the written ones back at
 * the end, so the nests' loads and stores stay on the SM.
 *
 * Each point computes exactly what it computed in its own kernel: the numbers do not
 * change. */
#include <string.h>

#include "cuda_kern.h"

/* Fused when every kernel has at most this many points (16 passes of the block), and
 * the routine at least two kernels. */
enum { FUSE_MAX_POINTS = 4096, FUSE_MAX_KERNELS = 4096 };
/* A kernel's parameters must fit the 4 KiB every device and driver accepts (sm_70+ under
 * CUDA 12.1 and later take 32 KiB): at 8 bytes a pointer, this many buffers and symbols.
 * A routine over more stays separate launches. */
enum { FUSE_MAX_ARGS = 500 };
/* Static shared memory of a block (48 KiB), less what a kernel may use besides. */
static const long FUSE_SHARED_BYTES = 45056;

typedef struct Fuse {
  int *kernels; /* flattened launches */
  int n;
  bool ok;
} Fuse;

/* Dynamic sizes are read at each launch: such kernels stay launches of their own. */
static bool dynamic_args(const E *e, const CudaKernel *k) {
  for (int j = 0; j < k->nargs; j++) {
    const CudaArg *a = &k->args[j];
    if (a->kind == 'd' || ((a->kind == 'b' || a->kind == 'w') && cu_buf(e, a->index)->dsize)) return true;
  }
  return false;
}

static void flatten(E *e, int fi, Fuse *f, int depth) {
  const PtrVec *steps = &e->p->steps[fi];
  if (depth > 64) f->ok = false;
  for (int i = 0; i < steps->len && f->ok; i++) {
    const CudaStep *st = steps->items[i];
    if (st->call) {
      flatten(e, st->index, f, depth + 1);
      continue;
    }
    const CudaKernel *k = VEC_AT(e->p->kernels, CudaKernel, st->index);
    /* (a body that returned early would skip the block's barriers) */
    if (k->coop || !k->body || k->threads > FUSE_MAX_POINTS || k->ntdims || dynamic_args(e, k) || strstr(k->body, "return") ||
        f->n == FUSE_MAX_KERNELS) {
      f->ok = false;
      return;
    }
    f->kernels[f->n++] = st->index;
  }
}

static long buf_bytes(const E *e, int b) {
  const IrBuf *buf = cu_buf(e, b);
  return buf->size * (buf->elem == ELEM_F64 ? 8 : 4);
}

/* Would the fused kernel take at most FUSE_MAX_ARGS parameters (its buffers, symbols
 * and the scratch)? */
static bool few_args(E *e, const Fuse *f) {
  int nb = e->m->bufs.len, n = 1;
  char *seen = ANEWN(e->a, char, nb + e->m->syms.len + 1);
  for (int i = 0; i < f->n && n <= FUSE_MAX_ARGS; i++) {
    const CudaKernel *k = VEC_AT(e->p->kernels, CudaKernel, f->kernels[i]);
    for (int j = 0; j < k->nargs; j++) {
      const CudaArg *a = &k->args[j];
      if (a->kind == 'x') continue;
      int at = a->kind == 's' ? nb + a->index : a->index;
      if (!seen[at]) seen[at] = 1, n++;
    }
  }
  return n <= FUSE_MAX_ARGS;
}

/* The fused kernel's arguments: every buffer of its kernels ('w' if one writes it),
 * symbol and the scratch buffer. */
static CudaKernel *fused_kernel(E *e, const Fuse *f) {
  cu_begin_args(e);
  bool scratch = false;
  for (int i = 0; i < f->n; i++) {
    const CudaKernel *k = VEC_AT(e->p->kernels, CudaKernel, f->kernels[i]);
    for (int j = 0; j < k->nargs; j++) {
      const CudaArg *a = &k->args[j];
      if (a->kind == 's') e->sym[a->index] = true;
      else if (a->kind == 'x') scratch = true;
      else if (a->kind == 'w' || !e->arg[a->index]) e->arg[a->index] = a->kind;
    }
  }
  CudaKernel *k = cu_finish_kernel(e, scratch);
  k->coop = true;
  k->threads = CUDA_BLOCK;
  return k;
}

/* Slot of an argument in the since-the-last-barrier table (the scratch after the buffers). */
static int slot(const E *e, const CudaArg *a) { return a->kind == 'x' ? e->m->bufs.len : a->index; }

/* Nest c may run in the same phase as the nests since the last barrier when it neither
 * touches what they wrote nor writes what they read (a written argument may be read too). */
static bool needs_barrier(const E *e, const CudaKernel *c, const char *since) {
  for (int j = 0; j < c->nargs; j++) {
    const CudaArg *a = &c->args[j];
    if (a->kind == 's') continue;
    char was = since[slot(e, a)];
    if (was == 'w' || (was && (a->kind == 'w' || a->kind == 'x'))) return true;
  }
  return false;
}

static void mark_since(const E *e, const CudaKernel *c, char *since) {
  for (int j = 0; j < c->nargs; j++) {
    const CudaArg *a = &c->args[j];
    if (a->kind == 's') continue;
    char *x = &since[slot(e, a)];
    if (a->kind == 'w' || a->kind == 'x') *x = 'w';
    else if (!*x) *x = 'b';
  }
}

static void emit_fused(E *e, const IrFunc *fn, const Fuse *f, CudaKernel *k) {
  FILE *o = e->o;
  long bytes = 0;
  for (int j = 0; j < k->nargs; j++) {
    const CudaArg *a = &k->args[j];
    if (a->kind == 'b' || a->kind == 'w') bytes += (buf_bytes(e, a->index) + 15) / 16 * 16;
    if (a->kind == 'x') bytes += (e->scratch + 15) / 16 * 16;
  }
  bool shared = bytes <= FUSE_SHARED_BYTES;
  cr_comment(o, arena_printf(e->a, "%s: %d nests in one block%s", fn->name, f->n, shared ? ", buffers in shared memory" : ""));
  fprintf(o, "\nTDSL_KERNEL %s(", k->name);
  for (int j = 0; j < k->nargs; j++) {
    const CudaArg *a = &k->args[j];
    if (j) fputs(", ", o);
    if (a->kind == 's') fprintf(o, "int s%d", a->index);
    else if (a->kind == 'x') fprintf(o, "%s *__restrict__ gx", cu_ctype(e->scratch_elem));
    else fprintf(o, "%s *__restrict__ g%d", cu_ctype(cu_buf(e, a->index)->elem), a->index);
  }
  fputs(") {\n", o);
  if (shared) fprintf(o, "  __shared__ TDSL_ALIGN16 float sm[%ld];\n", bytes / 4);
  long off = 0;
  for (int j = 0; j < k->nargs; j++) {
    const CudaArg *a = &k->args[j];
    if (a->kind == 's') continue;
    const char *T = cu_ctype(a->kind == 'x' ? e->scratch_elem : cu_buf(e, a->index)->elem);
    const char *name = a->kind == 'x' ? "xs" : arena_printf(e->a, "b%d", a->index);
    const char *g = a->kind == 'x' ? "gx" : arena_printf(e->a, "g%d", a->index);
    long n = a->kind == 'x' ? e->scratch / (T[0] == 'd' ? 8 : 4) : cu_buf(e, a->index)->size;
    if (!shared) {
      fprintf(o, "  %s *%s = %s;\n", T, name, g);
      continue;
    }
    fprintf(o, "  %s *%s = (%s *)&sm[%ld];\n", T, name, T, off / 4);
    if (a->kind != 'x') fprintf(o, "  for (long i = threadIdx.x; i < %ldL; i += %d) %s[i] = %s[i];\n", n, CUDA_BLOCK, name, g);
    off += (n * (T[0] == 'd' ? 8 : 4) + 15) / 16 * 16;
  }
  if (shared) fputs("  __syncthreads();\n", o);
  char *since = ANEWN(e->a, char, e->m->bufs.len + 2); /* since the last barrier: 'b' read, 'w' written */
  for (int i = 0; i < f->n; i++) {
    const CudaKernel *c = VEC_AT(e->p->kernels, CudaKernel, f->kernels[i]);
    if (i && needs_barrier(e, c, since)) {
      fputs("  __syncthreads();\n", o);
      memset(since, 0, (size_t)e->m->bufs.len + 2);
    }
    mark_since(e, c, since);
    fprintf(o, "  /* %s */\n  for (long tt = threadIdx.x; tt < %ldL; tt += %d) {\n  long t = tt;\n%s  }\n", c->name, c->threads,
            CUDA_BLOCK, c->body);
  }
  fputs("  __syncthreads();\n", o);
  for (int j = 0; shared && j < k->nargs; j++) {
    const CudaArg *a = &k->args[j];
    if (a->kind == 'w')
      fprintf(o, "  for (long i = threadIdx.x; i < %ldL; i += %d) g%d[i] = b%d[i];\n", cu_buf(e, a->index)->size, CUDA_BLOCK,
              a->index, a->index);
  }
  cu_kernel_tail(e, k);
}

void cu_fuse_routines(E *e) {
  int nf = e->m->funcs.len;
  bool *called = ANEWN(e->a, bool, nf + 1);
  for (int fi = 0; fi < nf; fi++)
    for (int i = 0; i < e->p->steps[fi].len; i++) {
      const CudaStep *st = e->p->steps[fi].items[i];
      if (st->call) called[st->index] = true;
    }
  int *kernels = ANEWN(e->a, int, FUSE_MAX_KERNELS); /* reused: each routine is emitted at once */
  for (int fi = 0; fi < nf; fi++) {
    if (called[fi]) continue;
    Fuse f = {kernels, 0, true};
    flatten(e, fi, &f, 0);
    if (!f.ok || f.n < 2 || !few_args(e, &f)) continue;
    CudaKernel *k = fused_kernel(e, &f);
    emit_fused(e, VEC_AT(e->m->funcs, IrFunc, fi), &f, k);
    CudaStep *st = ANEW(e->a, CudaStep);
    st->index = k->id;
    e->p->steps[fi] = (PtrVec){0};
    vec_push(e->a, &e->p->steps[fi], st);
    /* One launch: the host code runs it, not the runtime's walk of the callees. */
    IrFunc *nf = ANEW(e->a, IrFunc); /* a copy: another module may share the function */
    *nf = *VEC_AT(e->mm->funcs, IrFunc, fi);
    nf->seq = false;
    e->mm->funcs.items[fi] = nf;
  }
}
