/* Fusion across a routine's callees (src/sched_fuse.c) on a hand-built routine:
 *   y =: x * 2;  z =: relu y;  g =: 0;  g =+ z;  t =: z^T;  u =: t + y
 * y, z and g become one nest (g's zeroing gone: its first `=+` overwrites); t reads z
 * transposed, so it stays out of that nest; u reads t and y at its own cell, so t and u
 * become a second one. The fused module computes what the naive one does, bit for bit
 * at -O0. */
#include "graph_builder.h"
#include "schedule.h"

enum { R = 13 }; /* below the size at which lowering tiles a transpose */

static UpdateStep *pointwise(GB *b, Tensor *lhs, int nrhs, Tensor **rhs, bool transposed) {
  UpdateStep *s = gb_step(b, lhs, nrhs, rhs, 2, (int[]){R, R});
  for (int sl = 0; sl <= nrhs; sl++) {
    bool t = transposed && sl == 1;
    gb_it(s, sl, 0, t ? 1 : 0), gb_it(s, sl, 1, t ? 0 : 1);
  }
  return s;
}

/* The stores in s. */
static int stores_in(const Stmt *s) {
  int n = s->kind == S_STORE;
  for (int i = 0; i < s->body.len; i++) n += stores_in(s->body.items[i]);
  return n;
}

static tdsl_model *open_module(GB *b, IrModule *m, gcc_jit_context **jc, gcc_jit_result **jr) {
  JitOpts o = {.opt_level = 0};
  *jr = jit_compile_mem(&b->a, m, &o, jc);
  char err[256];
  tdsl_model *md = *jr ? tdsl_open_resolved(gb_resolve, *jr, err, sizeof err) : NULL;
  if (md) tdsl_init(md, 3);
  return md;
}

int main(void) {
  GB b;
  gb_init(&b);
  int dims[2] = {R, R};
  Tensor *x = gb_tensor(&b, "x", TK_PARAM, 0, 1, 1, dims);
  x->init.kind = INIT_UNIFORM;
  Tensor *y = gb_tensor(&b, "y", TK_OP, 0, 1, 1, dims), *z = gb_tensor(&b, "z", TK_OP, 0, 1, 1, dims);
  Tensor *g = gb_tensor(&b, "g", TK_OP, 0, 1, 1, dims), *t = gb_tensor(&b, "t", TK_OP, 0, 1, 1, dims);
  Tensor *u = gb_tensor(&b, "u", TK_OP, 0, 1, 1, dims);
  Routine *rt = gb_routine(&b, "step");
  Code *c = &rt->code;
  gb_asgn(&b, c, (Buf){y, false}, 0, OP_ARG2, false, ae_op(&b.a, OP_MUL, ae_buf(&b.a, x, false, 1), ae_const(&b.a, 2), NULL),
          pointwise(&b, y, 1, (Tensor *[]){x}, false));
  gb_asgn(&b, c, (Buf){z, false}, 0, OP_ARG2, false, ae_op(&b.a, OP_RELU, ae_buf(&b.a, y, false, 1), NULL, NULL),
          pointwise(&b, z, 1, (Tensor *[]){y}, false));
  gb_asgn(&b, c, (Buf){g, false}, 0, OP_ARG2, false, ae_const(&b.a, 0), pointwise(&b, g, 0, NULL, false));
  gb_asgn(&b, c, (Buf){g, false}, 0, OP_ADD, false, ae_buf(&b.a, z, false, 1), pointwise(&b, g, 1, (Tensor *[]){z}, false));
  gb_asgn(&b, c, (Buf){t, false}, 0, OP_ARG2, false, ae_buf(&b.a, z, false, 1), pointwise(&b, t, 1, (Tensor *[]){z}, true));
  gb_asgn(&b, c, (Buf){u, false}, 0, OP_ARG2, false, ae_op(&b.a, OP_ADD, ae_buf(&b.a, t, false, 1), ae_buf(&b.a, y, false, 2), NULL),
          pointwise(&b, u, 2, (Tensor *[]){t, y}, false));
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  CHECK(b.ir != NULL);
  if (!b.ir) return tk_exit("test_fuse");
  SchedOpts so = {.vec_bytes = 16};
  IrModule *sm = sched_module(&b.a, b.ir, &so);
  if (getenv("DUMP")) ir_print(stderr, sm);
  /* the routine's code: nests of 3 stores (y, z, g) and 2 (t, u), no zeroing of g */
  int nests = 0, three = 0, two = 0, consts = 0;
  for (int f = 0; f < sm->funcs.len; f++) {
    const IrFunc *fn = VEC_AT(sm->funcs, IrFunc, f);
    if (!strstr(fn->name, ".fuse")) continue;
    for (int i = 0; i < fn->body.len; i++) {
      const Stmt *s = fn->body.items[i];
      if (s->kind != S_LOOP) continue;
      nests++;
      three += stores_in(s) == 3, two += stores_in(s) == 2;
      const Stmt *in = s;
      while (in->kind == S_LOOP) in = in->body.items[0];
      consts += in->kind == S_STORE && in->val->kind == X_CONST;
    }
  }
  CHECK(nests == 2 && three == 1 && two == 1 && consts == 0, "nests %d (3 stores: %d, 2: %d), constant stores %d", nests, three, two,
        consts);
  /* the naive and the fused module agree bit for bit */
  gcc_jit_context *jc0 = NULL, *jc1 = NULL;
  gcc_jit_result *jr0 = NULL, *jr1 = NULL;
  tdsl_model *naive = open_module(&b, b.ir, &jc0, &jr0), *fused = open_module(&b, sm, &jc1, &jr1);
  CHECK(naive && fused);
  if (naive && fused) {
    CHECK(tdsl_call(naive, "step") == 0 && tdsl_call(fused, "step") == 0);
    for (int i = 0; i < tdsl_num_tensors(naive); i++) {
      tdsl_tensor_info p, q;
      CHECK(tdsl_tensor(naive, i, &p) == 0 && tdsl_tensor(fused, i, &q) == 0);
      CHECK(p.size == q.size && !memcmp(p.data, q.data, sizeof(float) * (size_t)p.size), "tensor %s differs", p.name);
    }
  }
  if (naive) tdsl_close(naive);
  if (fused) tdsl_close(fused);
  if (jr0) gcc_jit_result_release(jr0);
  if (jr1) gcc_jit_result_release(jr1);
  if (jc0) gcc_jit_context_release(jc0);
  if (jc1) gcc_jit_context_release(jc1);
  gb_free(&b);
  return tk_exit("test_fuse");
}
