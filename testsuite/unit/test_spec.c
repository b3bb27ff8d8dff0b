/* test_spec.c: the einsum spec language (src/spec.h): parse -> print round trips,
 * the structure of parsed specs, error columns and messages, and spec_error_loc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "testkit.h"

static Arena arena;

static char *render(const Spec *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  spec_print(f, s);
  fclose(f);
  char *r = arena_strdup(&arena, buf);
  free(buf);
  return r;
}

static Spec *parse_ok(const char *text) {
  int col = -1;
  const char *msg = NULL;
  Spec *s = spec_parse(&arena, text, &col, &msg);
  CHECK(s != NULL, "\"%s\" should parse, got col %d: %s", text, col, msg ? msg : "?");
  return s;
}

/* Structural equality, ignoring columns. */
static bool coef_eq(SpecCoef a, SpecCoef b) {
  if (a.ident || b.ident)
    return a.ident && b.ident && !strcmp(a.ident, b.ident);
  return a.value == b.value;
}
static bool str_eq(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}
static bool axis_eq(const SpecAxis *a, const SpecAxis *b) {
  return a->kind == b->kind && str_eq(a->name, b->name) && a->fixed == b->fixed &&
         coef_eq(a->stride, b->stride) && coef_eq(a->dilation, b->dilation) &&
         str_eq(a->kernel, b->kernel) && a->offset == b->offset && a->conv == b->conv;
}
static bool vec_eq(const PtrVec *a, const PtrVec *b) {
  if (a->len != b->len)
    return false;
  for (int i = 0; i < a->len; i++)
    if (!axis_eq(VEC_AT(*a, SpecAxis, i), VEC_AT(*b, SpecAxis, i)))
      return false;
  return true;
}
static bool row_eq(const SpecRow *a, const SpecRow *b) {
  return vec_eq(&a->left, &b->left) && str_eq(a->rowvar, b->rowvar) && vec_eq(&a->right, &b->right);
}
static bool slot_eq(const SpecSlot *a, const SpecSlot *b) {
  return a->has_batch == b->has_batch && a->has_input == b->has_input &&
         row_eq(&a->batch, &b->batch) && row_eq(&a->input, &b->input) &&
         row_eq(&a->output, &b->output);
}
static bool spec_eq(const Spec *a, const Spec *b) {
  if (a->nargs != b->nargs || !slot_eq(a->result, b->result))
    return false;
  for (int k = 0; k < a->nargs; k++)
    if (!slot_eq(a->args[k], b->args[k]))
      return false;
  return true;
}

/* in -> canonical rendering; the rendering must parse back to an equal spec and
 * render to itself. */
static const struct { const char *in, *out; } round_trips[] = {
  /* the conformance suite's specs */
  {"b|i->o => o|b->i", "b|i->o => o|b->i"},
  {"ab|cd->ef => cf|ae->db", "ab|cd->ef => cf|ae->db"},
  {"...|i->o => ...|o->i", "...|i->o => ...|o->i"},
  {"..v..|...ijk => ..v..kji", "..v..|...ijk => ..v..kji"},
  {"..v..|..w.. => ..w..|..v..", "..v..|..w.. => ..w..|..v.."},
  {"...|1->... => ...|...", "...|1->... => ...|..."},
  {"2...|... => ...|...", "2...|... => ...|..."},
  {"2...|...", "2...|..."},
  {"rows, cols => cols, rows", "rows, cols => cols, rows"},
  {"row, inner; inner, col => row, col", "row, inner; inner, col => row, col"},
  {"... | 2*oh<+kh, 2*ow<+kw, ..ic..; kh, kw, ..ic.. -> ..oc.. => ... | oh, ow, ..oc..",
   "... | 2*oh<+kh, 2*ow<+kw, ..ic..; kh, kw, ..ic.. -> ..oc.. => ... | oh, ow, ..oc.."},
  {"... | 2*oh<+wh, 2*ow<+ww, ..c..; wh, ww => ... | oh, ow, ..c..",
   "... | 2*oh<+wh, 2*ow<+ww, ..c..; wh, ww => ... | oh, ow, ..c.."},
  {"o=+k; k => o", "o=+k; k => o"},
  {"o<+k; k => o", "o<+k; k => o"},
  {"o<+2*k; k => o", "o<+2*k; k => o"},
  {"2*o<+k; k => o", "2*o<+k; k => o"},
  {"oh=+kh, ow=+kw; kh, kw => oh, ow", "oh=+kh, ow=+kw; kh, kw => oh, ow"},
  {"i->...o => ...io", "i->...o => ...io"},
  {"...|i->1; ...|j...->i => ...|ij", "...|i->1; ...|j...->i => ...|ij"},
  {"i->1; ij...->0 => ...->ji", "i->1; ij...->0 => ...->ji"},
  {"i; j => i->j", "i; j => i->j"},
  {"ij; jk => ik", "ij; jk => ik"},
  {"ij;jk=>ik", "ij; jk => ik"},
  {"k=>k2", "k => k2"},
  {"i->j => i0j", "i->j => i0j"},
  {"i|j->k; l|m->n => il|jm->kn", "i|j->k; l|m->n => il|jm->kn"},
  {"...|...->... => 0", "...|...->... => 0"},
  {"... => 0", "... => 0"},
  {"...|... => 0", "...|... => 0"},
  {"...|...->...o => o", "...|...->...o => o"},
  {"...|..d.. => ...|0", "...|..d.. => ...|0"},
  {"...|...->... => ...|...->0", "...|...->... => ...|...->0"},
  {"...b|...i->...o => i|o->b", "...b|...i->...o => i|o->b"},
  {"...b|...i->...o => ...i|...o->...b", "...b|...i->...o => ...i|...o->...b"},
  {"b|...->o => o|...->b", "b|...->o => o|...->b"},
  {"..r..; ..r.. => ..r..", "..r..; ..r.. => ..r.."},
  {"i->...; j->... => ...ij", "i->...; j->... => ...ij"},
  {"...|i->...; ...|...->i => ...|i", "...|i->...; ...|...->i => ...|i"},
  {"ik => 0", "ik => 0"},
  /* OCANNL's examples */
  {"2..v..|... => ..v..", "2..v..|... => ..v.."},
  {"...|... => ...|...2", "...|... => ...|...2"},
  {"ijk => ki", "ijk => ki"},
  {"is*a+d*bc;b=>iac", "is*a+d*bc; b => iac"},
  {"stride * a + dilation * b; b=>a,", "stride*a+dilation*b; b => a"},
  {"stride*o<+dilation*k; k => o", "stride*o<+dilation*k; k => o"},
  /* single-character mode details */
  {"  i j  ->  k ", "ij->k"},
  {"i12j", "i12j"},
  {"1 2", "1 2"},
  {"_i_", "_i_"},
  {"|", "|"},
  {"->", "->"},
  {"=> 0", " => 0"},
  {"..batch..|..input..->..output..", "...|...->..."},
  {"..input..|x => ..batch..", "..input..|x => ..batch.."},
  /* multi-character mode details (`*`, `+`, `<`, `=` select it, not only `,`) */
  {"io+kj", "io+kj"},
  {"a+bc", "a+bc"},
  {"2*o+3*k", "2*o+3*k"},
  {"3*i", "3*i"},
  {"o+1", "o+1"},
  {"2*o+1", "2*o+1"},
  {"a b c, d", "a, b, c, d"},
  {"abc, => abc", "abc => abc,"},
  {"a, b,", "a, b"},
  {"batch|input->3*output+1*kernel,", "batch | input -> 3*output+kernel"},
  {"i,j->2*i+j", "i, j -> 2*i+j"},
  {"a,2*b+c", "a, 2*b+c"},
  {"s*o=+d*k, x", "s*o=+d*k, x"},
  /* OCANNL's lexer: '<' / '=' and '+' are two tokens (nn_blocks writes `2*oh< + wh`) */
  {"... | 2*oh< + wh, 2*ow< + ww, ..c..", "... | 2*oh<+wh, 2*ow<+ww, ..c.."},
  {"s*o= +d*k", "s*o=+d*k"},
  {"regular, 3*strided", "regular, 3*strided"},
  {"..v,..|x", "..v.. | x,"},
  {"..batch.., seq | heads, ..dims..; ..batch.., time | heads, ..dims.. => ..batch.., seq | "
   "time -> heads",
   "..., seq | heads, ..dims..; ..., time | heads, ..dims.. => ..., seq | time -> heads"},
  {"x_1, _, y", "x_1, _, y"},
  {"a,|", "a, | "},
  {"a, => b", "a => b,"},
  {"12, 3", "12, 3"},
};

static void test_round_trips(void) {
  for (size_t i = 0; i < sizeof round_trips / sizeof round_trips[0]; i++) {
    if (!round_trips[i].out)
      continue;
    Spec *s = parse_ok(round_trips[i].in);
    if (!s)
      continue;
    char *out = render(s);
    CHECK(!strcmp(out, round_trips[i].out), "\"%s\" printed as \"%s\", want \"%s\"",
          round_trips[i].in, out, round_trips[i].out);
    Spec *again = parse_ok(out);
    if (!again)
      continue;
    CHECK(spec_eq(s, again), "\"%s\" and its rendering \"%s\" differ", round_trips[i].in, out);
    CHECK(!strcmp(render(again), out), "rendering of \"%s\" is not stable", out);
  }
}

static SpecAxis *ax(const PtrVec *v, int i) { return VEC_AT(*v, SpecAxis, i); }

static void test_structure(void) {
  /* binary, single-character, all three rows */
  Spec *s = parse_ok("b|i->o; b|i->o => b|i->o");
  if (s) {
    CHECK(s->nargs == 2 && !s->multichar, "nargs %d", s->nargs);
    SpecSlot *a = s->args[0];
    CHECK(a->has_batch && a->has_input, "rows given");
    CHECK(a->batch.left.len == 1 && !strcmp(ax(&a->batch.left, 0)->name, "b"), "batch");
    CHECK(a->input.left.len == 1 && ax(&a->input.left, 0)->col == 2, "input col %d",
          ax(&a->input.left, 0)->col);
    CHECK(s->args[1]->col == 8, "second arg col %d", s->args[1]->col);
    CHECK(s->result->output.left.len == 1 && ax(&s->result->output.left, 0)->col == 23,
          "result output col");
    CHECK(spec_slot_row(a, KIND_BATCH) == &a->batch && spec_slot_row(a, KIND_INPUT) == &a->input &&
              spec_slot_row(a, KIND_OUTPUT) == &a->output,
          "spec_slot_row");
  }
  /* unary, bare slot */
  s = parse_ok("ij");
  if (s) {
    CHECK(s->nargs == 0 && s->result && !s->result->has_batch && !s->result->has_input,
          "bare slot");
    CHECK(spec_row_len(&s->result->output) == 2, "two axes");
  }
  s = parse_ok("i => i");
  CHECK(s && s->nargs == 1 && s->args[0] && s->result, "unary");

  /* `...` is named after its row kind; axes before/after it */
  s = parse_ok("...|j...->i => ...|ij");
  if (s) {
    SpecSlot *a = s->args[0];
    CHECK(!strcmp(a->batch.rowvar, "batch"), "batch rowvar %s", a->batch.rowvar);
    CHECK(!strcmp(a->input.rowvar, "input"), "input rowvar");
    CHECK(a->input.left.len == 1 && a->input.right.len == 0, "j is leftmost");
    CHECK(a->output.rowvar == NULL && a->output.left.len == 1, "output: just i");
    CHECK(!strcmp(s->result->batch.rowvar, "batch"), "result batch rowvar");
  }
  s = parse_ok("i->...o => ...io");
  if (s) {
    CHECK(!strcmp(s->args[0]->output.rowvar, "output"), "output rowvar");
    CHECK(s->args[0]->output.left.len == 0 && s->args[0]->output.right.len == 1,
          "o is rightmost");
    CHECK(s->result->output.right.len == 2, "io rightmost");
  }
  s = parse_ok("..v..|...ijk => ..v..kji");
  if (s) {
    CHECK(!strcmp(s->args[0]->batch.rowvar, "v"), "named rowvar");
    CHECK(!strcmp(s->args[0]->output.rowvar, "output") && s->args[0]->output.right.len == 3,
          "...ijk");
    CHECK(!strcmp(s->result->output.rowvar, "v") && s->result->output.right.len == 3,
          "..v..kji in the output row");
    CHECK(s->result->output.col == 6 + 10, "row col %d", s->result->output.col);
  }
  s = parse_ok("..batch..|x");
  CHECK(s && !strcmp(s->result->batch.rowvar, "batch"), "..batch.. == ...");
  s = parse_ok("..longname..|x");
  CHECK(s && !s->multichar && !strcmp(s->result->batch.rowvar, "longname"),
        "multi-letter rowvar in single-char mode");

  /* fixed indices and placeholders */
  s = parse_ok("i->j => i0j");
  if (s) {
    PtrVec *o = &s->result->output.left;
    CHECK(o->len == 3 && ax(o, 1)->kind == AX_FIXED && ax(o, 1)->fixed == 0, "i0j");
    CHECK(ax(o, 0)->kind == AX_VAR && ax(o, 2)->kind == AX_VAR, "i, j");
  }
  s = parse_ok("2...|... => ...|...");
  if (s) {
    SpecRow *b = &s->args[0]->batch;
    CHECK(b->left.len == 1 && ax(&b->left, 0)->fixed == 2 && !strcmp(b->rowvar, "batch"),
          "2...");
  }
  s = parse_ok("k12");
  CHECK(s && s->result->output.left.len == 2 && ax(&s->result->output.left, 1)->fixed == 12,
        "digit run is one index");
  s = parse_ok("_, x");
  CHECK(s && s->multichar && ax(&s->result->output.left, 0)->kind == AX_PLACEHOLDER,
        "placeholder");

  /* multi-character mode */
  s = parse_ok("rows, cols => cols, rows");
  if (s) {
    CHECK(s->multichar, "multichar");
    PtrVec *o = &s->args[0]->output.left;
    CHECK(o->len == 2 && !strcmp(ax(o, 0)->name, "rows") && !strcmp(ax(o, 1)->name, "cols"),
          "rows, cols");
    CHECK(ax(o, 1)->col == 6 && ax(o, 1)->len == 4, "cols at 6, len %d", ax(o, 1)->len);
  }

  /* affine axes */
  s = parse_ok("... | 2*oh<+kh, 2*ow<+kw, ..ic..; kh, kw, ..ic.. -> ..oc.. => ... | oh, ow, ..oc..");
  if (s) {
    SpecRow *o = &s->args[0]->output;
    CHECK(o->left.len == 2 && !strcmp(o->rowvar, "ic"), "conv row");
    SpecAxis *x = ax(&o->left, 0);
    CHECK(x->kind == AX_AFFINE && x->stride.value == 1 * 2 && !x->stride.ident &&
              !strcmp(x->name, "oh") && x->conv == CONV_VALID && x->dilation.value == 1 &&
              !strcmp(x->kernel, "kh"),
          "2*oh<+kh");
    CHECK(x->col == 6 && x->len == 8, "affine span %d+%d", x->col, x->len);
    CHECK(!strcmp(s->args[1]->input.rowvar, "ic") && !strcmp(s->args[1]->output.rowvar, "oc"),
          "kernel rows");
  }
  s = parse_ok("o=+k; k => o");
  if (s) {
    SpecAxis *x = ax(&s->args[0]->output.left, 0);
    CHECK(x->kind == AX_AFFINE && x->conv == CONV_PADDED && x->stride.value == 1 &&
              x->dilation.value == 1 && !strcmp(x->kernel, "k"),
          "o=+k");
  }
  s = parse_ok("o<+2*k; k => o");
  if (s) {
    SpecAxis *x = ax(&s->args[0]->output.left, 0);
    CHECK(x->conv == CONV_VALID && x->dilation.value == 2 && !x->dilation.ident, "o<+2*k");
  }
  /* `*` and `+` select multi-character mode: "is" is one identifier (OCANNL) */
  s = parse_ok("is*a+d*bc;bc=>a");
  if (s) {
    CHECK(s->multichar, "affine spec is multi-character");
    PtrVec *o = &s->args[0]->output.left;
    CHECK(o->len == 1, "one axis, got %d", o->len);
    SpecAxis *x = ax(o, 0);
    CHECK(x->kind == AX_AFFINE && x->stride.ident && !strcmp(x->stride.ident, "is") &&
              !strcmp(x->name, "a") && x->conv == CONV_SCOPE && x->dilation.ident &&
              !strcmp(x->dilation.ident, "d") && !strcmp(x->kernel, "bc"),
          "is*a+d*bc");
  }
  /* a regression: read as identifiers, not as the letters s, t, r, ... */
  s = parse_ok("stride*o<+dilation*k; k => o");
  if (s) {
    SpecAxis *x = ax(&s->args[0]->output.left, 0);
    CHECK(s->multichar && x->kind == AX_AFFINE && x->conv == CONV_VALID &&
              !strcmp(x->stride.ident, "stride") && !strcmp(x->dilation.ident, "dilation") &&
              !strcmp(x->kernel, "k"),
          "stride*o<+dilation*k");
  }
  s = parse_ok("stride*o+dilation*k, x");
  if (s) {
    SpecAxis *x = ax(&s->result->output.left, 0);
    CHECK(!strcmp(x->stride.ident, "stride") && !strcmp(x->dilation.ident, "dilation"),
          "identifier coefficients");
  }
  s = parse_ok("2*o");
  if (s) {
    SpecAxis *x = ax(&s->result->output.left, 0);
    CHECK(x->kind == AX_AFFINE && x->stride.value == 2 && !x->kernel && x->conv == CONV_NONE &&
              x->dilation.value == 0,
          "strided iteration");
  }
  s = parse_ok("o+1");
  if (s) {
    SpecAxis *x = ax(&s->result->output.left, 0);
    CHECK(x->kind == AX_AFFINE && !x->kernel && x->offset == 1 && x->conv == CONV_SCOPE,
          "offset");
  }
  s = parse_ok("ij; jk => ik");
  CHECK(s && s->text && !strcmp(s->text, "ij; jk => ik"), "text kept");
}

/* Errors: the column and a substring of the message. */
static const struct { const char *in; int col; const char *msg; } errors[] = {
  {"i$j => ji", 1, "'$'"},
  {"i$j => ji", 1, "unexpected character"},
  {"a, b$", 4, "'$'"},
  {"ab\x01", 2, "'\\x01'"},
  {"", 0, "empty"},
  {"   ", 0, "empty"},
  {"a; b", 4, "missing '=>'"},
  {"ij; jk", 6, "=>"},
  {"a; b; c; d => e", 9, "at most three arguments"},
  {"a=>b=>c", 4, "'=>'"},
  {"...a...", 4, "second row variable"},
  {"..v..|..a....b.. => x", 11, "second row variable"},
  {"x, ..a.., ..b..", 10, "'..b..'"},
  {"a|b|c", 3, "'|'"},
  {"i->o->b", 4, "'->'"},
  {"i->o|b", 4, "'|'"},
  {"a,,b", 2, "','"},
  {", a", 0, "','"},
  {"....|x", 0, "empty name"},
  {"..|x", 0, "'.'"},
  {"2a, b", 0, "'2a'"},
  {"2*+k", 2, "affine"},
  {"o+*k", 2, "'*'"},
  {"o<+", 3, "end of einsum spec"},
  {"2*", 2, "end"},
  {"a -> b ; c", 10, "missing"},
  {"99999999999", 0, "too large"},
  {"a|b => c; d", 8, "';'"},
  {"a=b", 1, "'='"},
  {"a<b", 1, "'<'"},
  {"a-b", 1, "'-'"},
  {"a.b", 1, "'.'"},
  {"a^b", 1, "'^'"},
  {"a&b", 1, "'&'"},
  {"a, b^c", 4, "concatenation"},
  {"...b..|x", 0, "written `..b..`, not `...b..`"},
  {"... batch , .., x", 0, "written `..batch..`"},
  {"...batch..|x", 0, "unnamed context ellipsis"},
};

/* The mode rule alone (tdsl(7), EINSUM SPECS). */
static const struct { const char *in; bool multi; } modes[] = {
  {"ij;jk=>ik", false}, {"ij; jk => ik", false}, {"b|i->o => o|b->i", false},
  {"..v..|x", false},   {"i => 0", false},       {"a, b", true},
  {"a*b", true},        {"a+b", true},           {"a^b", true},
  {"a&b", true},        {"o<+k", true},          {"o=+k", true},
  {"a=b", true},        {"a=", true},            {"x => y=", true},
};

static void test_modes(void) {
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    CHECK(spec_is_multichar(modes[i].in) == modes[i].multi, "\"%s\": multichar %d",
          modes[i].in, modes[i].multi);
}

static void test_errors(void) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    int col = -1;
    const char *msg = NULL;
    Spec *s = spec_parse(&arena, errors[i].in, &col, &msg);
    CHECK(s == NULL, "\"%s\" should fail", errors[i].in);
    if (s)
      continue;
    CHECK(col == errors[i].col, "\"%s\": column %d, want %d (%s)", errors[i].in, col,
          errors[i].col, msg);
    CHECK(msg && strstr(msg, errors[i].msg), "\"%s\": message \"%s\" lacks \"%s\"",
          errors[i].in, msg ? msg : "(null)", errors[i].msg);
  }
}

static void test_error_loc(void) {
  /* `"` at line 3, column 17; the spec starts at column 18. */
  const char *src = "let a = 1\n"
                    "let b = 2\n"
                    "let%op y = x ++ \"i$j => ji\"\n"
                    "let%op z = x ++ \"a\\tb\\\\\\\"\\x41z$\"\n"
                    "let%op w = x ++ \"a\\\nb$\"\n";
  SrcFile f = {"t.tdsl", src, strlen(src)};
  Loc q = {&f, 3, 17};
  Loc l = spec_error_loc(q, 1);
  CHECK(l.file == &f && l.line == 3 && l.col == 19, "plain: %d:%d", l.line, l.col);
  l = spec_error_loc(q, 0);
  CHECK(l.line == 3 && l.col == 18, "first char: %d:%d", l.line, l.col);
  /* decoded: a TAB b \ " A z $ -> '$' is byte 7; source: a \t b \\ \" \x41 z $ */
  q.line = 4;
  l = spec_error_loc(q, 7);
  CHECK(l.line == 4 && l.col == 18 + 13, "escapes: %d:%d", l.line, l.col);
  l = spec_error_loc(q, 1);
  CHECK(l.line == 4 && l.col == 19, "escape itself: %d:%d", l.line, l.col);
  l = spec_error_loc(q, 6);
  CHECK(l.line == 4 && l.col == 18 + 12, "after \\x41: %d:%d", l.line, l.col);
  /* a backslash-newline continuation: '$' is decoded byte 2, on the next line */
  q.line = 5;
  l = spec_error_loc(q, 2);
  CHECK(l.line == 6 && l.col == 2, "continuation: %d:%d", l.line, l.col);
  /* no file: offset from the quote */
  Loc nf = {NULL, 7, 10};
  l = spec_error_loc(nf, 3);
  CHECK(l.line == 7 && l.col == 14, "no file: %d:%d", l.line, l.col);
}

int main(void) {
  test_round_trips();
  test_structure();
  test_modes();
  test_errors();
  test_error_loc();
  arena_free(&arena);
  return tk_exit("test_spec");
}
