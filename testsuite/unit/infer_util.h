/* infer_util.h: builds Graphs by hand for shape/projection inference unit tests, with
 * a small einsum spec reader of its own (so the tests do not depend on grammar/spec.y). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "infer.h"

static int failures;
#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      failures++;                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                               \
      fputc('\n', stderr);                                                        \
    }                                                                             \
  } while (0)

typedef struct TB {
  Ctx ctx;
  Graph *g;
  char *errbuf;
  size_t errlen;
  FILE *errf;
  int line;
} TB;

static void tb_init(TB *b) {
  memset(b, 0, sizeof *b);
  b->errf = open_memstream(&b->errbuf, &b->errlen);
  diag_init(&b->ctx.diag, b->errf);
  b->g = ANEW(&b->ctx.arena, Graph);
}

static void tb_free(TB *b) {
  fclose(b->errf);
  free(b->errbuf);
  arena_free(&b->ctx.arena);
}

static const char *tb_errors(TB *b) {
  fflush(b->errf);
  return b->errbuf ? b->errbuf : "";
}

static Loc tb_loc(TB *b) {
  Loc l = {NULL, ++b->line, 1};
  return l;
}

/* "2,rgb=3" -> a declared row; NULL -> undeclared. */
static void tb_row(TB *b, RowDecl *rd, const char *s) {
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

static UpdateStep *tb_step_raw(TB *b, LogicKind k, Tensor *lhs) {
  UpdateStep *st = ANEW(&b->ctx.arena, UpdateStep);
  st->id = b->g->steps.len;
  st->kind = k;
  st->lhs = lhs;
  st->loc = tb_loc(b);
  vec_push(&b->ctx.arena, &b->g->steps, st);
  return st;
}

static Tensor *tb_new(TB *b, const char *name, TensorKind kind) {
  Tensor *t = ANEW(&b->ctx.arena, Tensor);
  t->id = b->g->tensors.len;
  t->name = name;
  t->kind = kind;
  t->loc = tb_loc(b);
  vec_push(&b->ctx.arena, &b->g->tensors, t);
  if (name) {
    NamedTensor *nt = ANEW(&b->ctx.arena, NamedTensor);
    nt->name = name;
    nt->t = t;
    vec_push(&b->ctx.arena, &b->g->names, nt);
  }
  return t;
}

/* A terminal tensor with declared rows (NULL = undeclared). */
static Tensor *tb_term(TB *b, const char *name, TensorKind kind, const char *batch, const char *input,
                       const char *output) {
  Tensor *t = tb_new(b, name, kind);
  tb_row(b, &t->decl[KIND_BATCH], batch);
  tb_row(b, &t->decl[KIND_INPUT], input);
  tb_row(b, &t->decl[KIND_OUTPUT], output);
  t->step = tb_step_raw(b, LOGIC_TERMINAL, t);
  return t;
}

/* A constant with every row declared ("" = no axes). */
static Tensor *tb_const(TB *b, const char *name, const char *batch, const char *input, const char *output) {
  return tb_term(b, name, TK_CONST, batch, input, output);
}

/* ---- a small einsum spec reader (both modes, row variables, fixed, _, affine) */

static SpecAxis *tb_axis(Arena *a, const char *s, int n) {
  SpecAxis *ax = ANEW(a, SpecAxis);
  char buf[64];
  snprintf(buf, sizeof buf, "%.*s", n, s);
  char *conv = strstr(buf, "<+");
  if (!conv) conv = strstr(buf, "=+");
  if (conv) {
    ax->kind = AX_AFFINE;
    ax->conv = conv[0] == '<' ? CONV_VALID : CONV_PADDED;
    *conv = 0;
    char *l = buf, *r = conv + 2, *star;
    if ((star = strchr(l, '*'))) { ax->stride.value = atoi(l); l = star + 1; }
    else ax->stride.value = 1;
    if ((star = strchr(r, '*'))) { ax->dilation.value = atoi(r); r = star + 1; }
    else ax->dilation.value = 1;
    ax->name = arena_strdup(a, l);
    ax->kernel = arena_strdup(a, r);
  } else if (isdigit((unsigned char)buf[0])) {
    ax->kind = AX_FIXED;
    ax->fixed = atoi(buf);
  } else if (!strcmp(buf, "_")) {
    ax->kind = AX_PLACEHOLDER;
  } else {
    ax->kind = AX_VAR;
    ax->name = arena_strdup(a, buf);
  }
  return ax;
}

static void tb_specrow(Arena *a, SpecRow *r, const char *s, int n, bool multi, const char *kind) {
  int i = 0;
  while (i < n) {
    while (i < n && (s[i] == ' ' || s[i] == ',')) i++;
    if (i >= n) break;
    if (s[i] == '.' && i + 2 < n && s[i + 1] == '.') {
      if (s[i + 2] == '.') { r->rowvar = kind; i += 3; continue; }
      int j = i + 2;
      while (j < n && s[j] != '.') j++;
      r->rowvar = arena_strndup(a, s + i + 2, (size_t)(j - i - 2));
      i = j + 2;
      continue;
    }
    int j = i;
    if (multi) {
      while (j < n && s[j] != ',' && s[j] != ' ') j++;
    } else {
      /* [N*]c[(<+|=+)[N*]c] or one character */
      if (isdigit((unsigned char)s[j]) && j + 1 < n && s[j + 1] == '*') j += 2;
      j++;
      if (j + 1 < n && (s[j] == '<' || s[j] == '=') && s[j + 1] == '+') {
        j += 2;
        if (isdigit((unsigned char)s[j]) && j + 1 < n && s[j + 1] == '*') j += 2;
        j++;
      }
    }
    vec_push(a, r->rowvar ? &r->right : &r->left, tb_axis(a, s + i, j - i));
    i = j;
  }
}

static SpecSlot *tb_slot(Arena *a, const char *s, int n, bool multi) {
  SpecSlot *sl = ANEW(a, SpecSlot);
  char buf[256];
  snprintf(buf, sizeof buf, "%.*s", n, s);
  char *bar = strchr(buf, '|'), *arrow = strstr(buf, "->");
  char *in = buf;
  if (bar) {
    sl->has_batch = true;
    tb_specrow(a, &sl->batch, buf, (int)(bar - buf), multi, "batch");
    in = bar + 1;
  }
  char *out = in;
  if (arrow) {
    sl->has_input = true;
    tb_specrow(a, &sl->input, in, (int)(arrow - in), multi, "input");
    out = arrow + 2;
  }
  tb_specrow(a, &sl->output, out, (int)strlen(out), multi, "output");
  return sl;
}

static Spec *tb_spec(Arena *a, const char *text) {
  Spec *sp = ANEW(a, Spec);
  sp->text = text;
  sp->multichar = strchr(text, ',') != NULL;
  const char *arrow = strstr(text, "=>");
  const char *semi = strchr(text, ';');
  if (!arrow) {
    sp->result = tb_slot(a, text, (int)strlen(text), sp->multichar);
    return sp;
  }
  if (semi && semi < arrow) {
    sp->nargs = 2;
    sp->args[0] = tb_slot(a, text, (int)(semi - text), sp->multichar);
    sp->args[1] = tb_slot(a, semi + 1, (int)(arrow - semi - 1), sp->multichar);
  } else {
    sp->nargs = 1;
    sp->args[0] = tb_slot(a, text, (int)(arrow - text), sp->multichar);
  }
  sp->result = tb_slot(a, arrow + 2, (int)strlen(arrow + 2), sp->multichar);
  return sp;
}

/* A computed tensor: lhs = op(rhs...), spec may be NULL. */
static Tensor *tb_op(TB *b, const char *name, LogicKind k, const char *spec, Tensor *r1, Tensor *r2, Tensor *r3) {
  Tensor *t = tb_new(b, name, TK_OP);
  UpdateStep *st = tb_step_raw(b, k, t);
  st->rhs[0] = r1, st->rhs[1] = r2, st->rhs[2] = r3;
  st->nrhs = r3 ? 3 : r2 ? 2 : 1;
  if (spec) st->spec = tb_spec(&b->ctx.arena, spec);
  t->step = st;
  return t;
}

/* The shape of t as --dump-shapes prints it. */
static const char *tb_shape(TB *b, Tensor *t) {
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
