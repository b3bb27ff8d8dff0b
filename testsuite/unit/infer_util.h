/* infer_util.h: builds Graphs by hand for shape/projection inference unit tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "infer.h"
#include "testkit.h"


typedef struct TB {
  Ctx ctx;
  Graph *g;
  char *errbuf;
  size_t errlen;
  FILE *errf;
  int line;
} TB;

static inline void tb_init(TB *b) {
  memset(b, 0, sizeof *b);
  b->errf = open_memstream(&b->errbuf, &b->errlen);
  diag_init(&b->ctx.diag, b->errf);
  b->g = ANEW(&b->ctx.arena, Graph);
}

static inline void tb_free(TB *b) {
  fclose(b->errf);
  free(b->errbuf);
  arena_free(&b->ctx.arena);
}

static inline const char *tb_errors(TB *b) {
  fflush(b->errf);
  return b->errbuf ? b->errbuf : "";
}

static inline Loc tb_loc(TB *b) {
  Loc l = {NULL, ++b->line, 1};
  return l;
}

/* A solver alone, with its diagnostics captured (tests of the solver's rules). */
typedef struct Sys {
  Arena arena;
  Diag diag;
  FILE *errf;
  char *errbuf;
  size_t errlen;
  Solver s;
} Sys;

static inline void sys_init(Sys *y) {
  memset(y, 0, sizeof *y);
  y->errf = open_memstream(&y->errbuf, &y->errlen);
  diag_init(&y->diag, y->errf);
  solver_init(&y->s, &y->arena, &y->diag);
}

static inline const char *sys_errors(Sys *y) {
  fflush(y->errf);
  return y->errbuf ? y->errbuf : "";
}

static inline void sys_free(Sys *y) {
  solver_free(&y->s);
  fclose(y->errf);
  free(y->errbuf);
  arena_free(&y->arena);
}

/* "2,rgb=3" -> a declared row; NULL -> undeclared. */
static inline void tb_row(TB *b, RowDecl *rd, const char *s) {
  if (!s) return;
  rd->given = true;
  rd->dims = ANEWN(&b->ctx.arena, DimDecl, 16);
  while (*s) {
    const char *eq = strchr(s, '='), *comma = strchr(s, ',');
    if (!comma) comma = s + strlen(s);
    if (eq && eq < comma) {
      rd->dims[rd->n].label = arena_strndup(&b->ctx.arena, s, (size_t)(eq - s));
      s = eq + 1;
    }
    rd->dims[rd->n++].d = atoi(s);
    s = *comma ? comma + 1 : comma;
  }
}

/* A tensor on its own source line (terminals get their LOGIC_TERMINAL step there). */
static inline Tensor *tb_new(TB *b, const char *name, TensorKind kind) {
  Tensor *t = graph_tensor(&b->ctx.arena, b->g, kind, tb_loc(b));
  t->name = name;
  if (name) graph_name(&b->ctx.arena, b->g, name, t);
  return t;
}

/* A terminal tensor with declared rows (NULL = undeclared). */
static inline Tensor *tb_term(TB *b, const char *name, TensorKind kind, const char *batch, const char *input,
                       const char *output) {
  Tensor *t = tb_new(b, name, kind);
  tb_row(b, &t->decl[KIND_BATCH], batch);
  tb_row(b, &t->decl[KIND_INPUT], input);
  tb_row(b, &t->decl[KIND_OUTPUT], output);
  return t;
}

/* A constant with every row declared ("" = no axes). */
static inline Tensor *tb_const(TB *b, const char *name, const char *batch, const char *input, const char *output) {
  return tb_term(b, name, TK_CONST, batch, input, output);
}

static inline Spec *tb_spec(Arena *a, const char *text) {
  int col;
  const char *msg;
  Spec *sp = spec_parse(a, text, &col, &msg);
  if (!sp) {
    fprintf(stderr, "bad spec \"%s\" at %d: %s\n", text, col, msg);
    exit(2);
  }
  return sp;
}

/* A computed tensor: lhs = op(rhs...), spec may be NULL. */
static inline Tensor *tb_op(TB *b, const char *name, LogicKind k, const char *spec, Tensor *r1, Tensor *r2, Tensor *r3) {
  Tensor *t = tb_new(b, name, TK_OP);
  Tensor *rhs[3] = {r1, r2, r3};
  UpdateStep *st = graph_step(&b->ctx.arena, b->g, k, t, r3 ? 3 : r2 ? 2 : 1, rhs, tb_loc(b));
  if (spec) st->spec = tb_spec(&b->ctx.arena, spec);
  t->step = st;
  return t;
}

/* The shape of t as --dump-shapes prints it. */
static inline const char *tb_shape(TB *b, Tensor *t) {
  Graph one = {0};
  NamedTensor nt = {"x", t};
  vec_push(&b->ctx.arena, &one.names, &nt);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  dump_shapes(m, &one, false);
  fclose(m);
  char *r = arena_strdup(&b->ctx.arena, buf + 3);
  free(buf);
  r[strlen(r) - 1] = 0;
  return r;
}

#define CHECK_SHAPE(b, t, want)                                                     \
  do {                                                                              \
    const char *got_ = tb_shape((b), (t));                                          \
    CHECK(!strcmp(got_, (want)), "%s: got '%s', want '%s'", (t)->name, got_, want); \
  } while (0)
