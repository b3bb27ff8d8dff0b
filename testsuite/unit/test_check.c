/* The differential oracle (src/check.c, tdslc --check) on hand-built models: two builds
 * of the same graph agree; a build whose matmul store is scaled by 1 + 2^-23 (one float
 * ULP, a stand-in for a reassociating optimization) agrees within the ULP tolerance and
 * not bitwise; one scaled by 2 (a miscompile) is caught at any tolerance, and the report
 * names the tensor, the cell, the assignment and the double-precision value. */
#include <unistd.h>

#include "check.h"
#include "graph_builder.h"

/* c[i,j] = sum_k a[i,k] b[k,j] (4x5 * 5x6, ranges; with `input`, a is a host input
 * nothing loads). */
static void matmul_graph(GB *b, bool input) {
  Tensor *a = gb_tensor(b, "a", input ? TK_TERM : TK_CONST, 0, 1, 1, (int[]){4, 5});
  Tensor *bb = gb_tensor(b, "b", TK_CONST, 0, 1, 1, (int[]){5, 6});
  Tensor *c = gb_tensor(b, "c", TK_OP, 0, 1, 1, (int[]){4, 6});
  if (!input) a->init.kind = INIT_RANGE;
  bb->init.kind = INIT_RANGE;
  gb_matmul(b, a, bb, c, 4, 6, 5);
}

/* Every store's value v becomes v * k. */
static void scale_stores(Arena *a, PtrVec *body, double k) {
  for (int i = 0; i < body->len; i++) {
    Stmt *s = body->items[i];
    if (s->kind == S_LOOP || s->kind == S_IF) scale_stores(a, &s->body, k);
    if (s->kind != S_STORE) continue;
    IrExpr *c = ANEW(a, IrExpr), *m = ANEW(a, IrExpr);
    c->kind = X_CONST;
    c->value = k;
    m->kind = X_OP;
    m->op = OP_MUL;
    m->a[0] = s->val;
    m->a[1] = c;
    s->val = m;
  }
}

/* Lowers the graph, scales the stores of c.fwd by k (k = 1: untouched), compiles at -O0. */
static bool open_scaled_as(GB *b, double k, bool input) {
  matmul_graph(b, input);
  b->ir = lower_graph(&b->a, &b->d, &b->g, false);
  if (!b->ir) return false;
  if (k != 1) scale_stores(&b->a, &VEC_AT(b->ir->funcs, IrFunc, ir_find_func(b->ir, "c.fwd"))->body, k);
  JitOpts o = {.opt_level = 0};
  b->jr = jit_compile_mem(&b->a, b->ir, &o, &b->jc);
  char err[256];
  b->m = b->jr ? tdsl_open_resolved(gb_resolve, b->jr, err, sizeof err) : NULL;
  return b->m != NULL;
}

static bool open_scaled(GB *b, double k) { return open_scaled_as(b, k, false); }

/* check_models with its stderr captured into out (stdout, the summary, discarded). */
static int run_check(GB *ref, GB *opt, int ulps, char *out, size_t outlen) {
  Ctx c;
  memset(&c, 0, sizeof c);
  FILE *tmp = tmpfile();
  fflush(stderr);
  fflush(stdout);
  int saved_err = dup(2), saved_out = dup(1);
  dup2(fileno(tmp), 2);
  dup2(fileno(tmp), 1);
  int rc = check_models(&c, ref->ir, ref->m, opt->m, ulps, "test");
  fflush(stderr);
  fflush(stdout);
  dup2(saved_err, 2);
  dup2(saved_out, 1);
  close(saved_err);
  close(saved_out);
  rewind(tmp);
  size_t n = fread(out, 1, outlen - 1, tmp);
  out[n] = 0;
  fclose(tmp);
  arena_free(&c.arena);
  return rc;
}

/* Special values: NaN agrees with NaN at any tolerance; the largest float against inf
 * (1 ULP apart) never. c[0,0] = 180 times the float FLT_MAX / 180 is FLT_MAX, times the
 * next float inf; every other cell is over 180 and inf in both. */
static void special_values(void) {
  static const double k[][2] = {{NAN, NAN}, {1.8904574813251603e+36, 1.8904576397814854e+36}};
  static const int agree_at[][2] = {{1, 1}, {0, 0}}; /* bitwise, 256 ULPs */
  for (int t = 0; t < 2; t++) {
    GB r, o;
    gb_init(&r);
    gb_init(&o);
    char msg[4096];
    CHECK(open_scaled(&r, k[t][0]) && open_scaled(&o, k[t][1]));
    if (r.m && o.m) {
      for (int u = 0; u < 2; u++)
        if (run_check(&r, &o, u ? 256 : 0, msg, sizeof msg) != !agree_at[t][u]) {
          fprintf(stderr, "special value case %d at %d ULPs: %s\n", t, u ? 256 : 0, msg);
          CHECK(0);
        }
      if (t == 1) CHECK(strstr(msg, "tensor c differs at cell 0 [0,0]: reference 3.40282347e+38, test inf"));
    }
    gb_free(&r);
    gb_free(&o);
  }
}

/* A host input nothing loaded takes made-up values in both builds: as zeros, the doubled
 * product (0 = 2 * 0) agreed. */
static void unloaded_input(void) {
  GB r, o;
  gb_init(&r);
  gb_init(&o);
  char msg[4096];
  CHECK(open_scaled_as(&r, 1, true) && open_scaled_as(&o, 2, true));
  if (r.m && o.m) {
    CHECK(run_check(&r, &o, 256, msg, sizeof msg) == 1);
    CHECK(strstr(msg, "routine c.forward: tensor c differs at cell"));
    CHECK(run_check(&r, &r, 0, msg, sizeof msg) == 0); /* the same values on both sides */
    if (failures) fprintf(stderr, "unloaded input: %s\n", msg);
  }
  gb_free(&r);
  gb_free(&o);
}

int main(void) {
  GB ref, same, ulp, wrong;
  special_values();
  unloaded_input();
  gb_init(&ref);
  gb_init(&same);
  gb_init(&ulp);
  gb_init(&wrong);
  CHECK(open_scaled(&ref, 1) && open_scaled(&same, 1));
  CHECK(open_scaled(&ulp, 1 + 0x1p-23) && open_scaled(&wrong, 2));
  char msg[4096];
  if (ref.m && same.m && ulp.m && wrong.m) {
    CHECK(run_check(&ref, &same, 0, msg, sizeof msg) == 0);
    CHECK(strstr(msg, "routines agree: test vs the -O0 reference (bitwise)"));
    CHECK(run_check(&ref, &ulp, 256, msg, sizeof msg) == 0);
    CHECK(run_check(&ref, &ulp, 0, msg, sizeof msg) == 1);
    CHECK(strstr(msg, "tensor c differs") && strstr(msg, "exact comparison"));
    CHECK(run_check(&ref, &wrong, 256, msg, sizeof msg) == 1);
    /* c[0,0] = 0*0 + 1*6 + 2*12 + 3*18 + 4*24 = 180 */
    CHECK(strstr(msg, "routine c.forward: tensor c differs at cell 0 [0,0]: reference 180, test 360"));
    CHECK(strstr(msg, "first written by `") && strstr(msg, "in c.fwd"));
    /* the double-precision run finds the reference exact (0 away), the candidate 180 away */
    CHECK(strstr(msg, "in double precision the cell is 180; the reference is within 0 of that everywhere in the tensor, the test build 180 away here"));
    if (failures) fprintf(stderr, "last report:\n%s", msg);
  }
  gb_free(&ref);
  gb_free(&same);
  gb_free(&ulp);
  gb_free(&wrong);
  return tk_exit("test_check");
}
