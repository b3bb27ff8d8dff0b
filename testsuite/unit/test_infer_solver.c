/* The constraint solver alone: closing stages, LUBs, Total_elems, convolution sizes,
 * order independence over many permutations, and termination on random systems. */
#include "infer_util.h"

/* A tiny xorshift generator: deterministic across runs. */
static unsigned long long rng = 88172645463325252ULL;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng % n);
}

static Row *known_row(Solver *s, int n, const int *d) {
  DimNode *dims[16];
  for (int i = 0; i < n; i++) dims[i] = dim_known(s, d[i], NULL);
  return row_closed(s, n, dims);
}

static Row *var_row(Solver *s, bool terminal) {
  RowVar *v = row_var(s, KIND_OUTPUT);
  v->terminal = terminal;
  return row_of_var(s, v);
}

/* "3,4" / "[r]" style rendering of a solved row. */
static void row_str(Solver *s, Row *r, char *buf, size_t cap) {
  Row *n = row_norm(s, r);
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < row_len(n) && len + 16 < cap; i++) {
    DimNode *d = i < n->nbeg ? n->beg[i] : n->end[i - n->nbeg];
    len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? "," : "", dim_size(d));
  }
  if (n->var) snprintf(buf + len, cap - len, "%s..", len ? "," : "");
}

static void lubs(void) {
  Sys y;
  /* a terminal variable below 3 closes to 3 */
  sys_init(&y);
  Solver *s = &y.s;
  DimNode *v = dim_var(s);
  v->terminal = true;
  con_dim_ineq(s, dim_known(s, 3, NULL), v, NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 3, "terminal LUB: %d", dim_size(v));
  sys_free(&y);
  /* below 3 and below 4: only 1 fits both */
  sys_init(&y);
  s = &y.s;
  v = dim_var(s);
  v->terminal = true;
  DimNode *w = dim_var(s);
  con_dim_ineq(s, w, v, NULL, NULL, NULL);
  con_dim_ineq(s, dim_known(s, 3, NULL), w, NULL, NULL, NULL);
  con_dim_ineq(s, dim_known(s, 4, NULL), v, NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 1, "conflicting bounds: %d", dim_size(v));
  CHECK(dim_size(w) == 1, "w: %d", dim_size(w));
  sys_free(&y);
  /* a non-terminal variable with only an upper bound closes to 1 (stage 7) */
  sys_init(&y);
  s = &y.s;
  v = dim_var(s);
  con_dim_ineq(s, dim_known(s, 3, NULL), v, NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 1, "non-terminal: %d", dim_size(v));
  sys_free(&y);
  /* a transitive row LUB: r <= q <= [5 | ..]; r terminal closes to one axis of 5 */
  sys_init(&y);
  s = &y.s;
  Row *r = var_row(s, true), *q = var_row(s, false), *top = var_row(s, false);
  con_row_ineq(s, q, r, NULL, NULL, NULL);
  con_row_ineq(s, top, q, NULL, NULL, NULL);
  int five[] = {5};
  con_row_ineq(s, top, known_row(s, 1, five), NULL, NULL, NULL);
  char buf[128];
  CHECK(solver_close(s), "%s", y.errbuf ? y.errbuf : "");
  row_str(s, r, buf, sizeof buf);
  CHECK(!strcmp(buf, "5"), "row LUB: %s", buf);
  sys_free(&y);
  /* At_least: a fixed index 2 with nothing else gives exactly 3 (stage 4) */
  sys_init(&y);
  s = &y.s;
  v = dim_var(s);
  con_at_least(s, v, 3, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 3, "at least: %d", dim_size(v));
  sys_free(&y);
}

/* {3 >= a, a >= b, 5 >= b}, a and b terminal: b = 1 (two different bounds above it,
 * one through a), a = 3; in every order of the three inequalities. */
static void interleave(void) {
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int o = 0; o < 6; o++) {
    Sys y;
    sys_init(&y);
    Solver *s = &y.s;
    DimNode *a = dim_var(s), *b = dim_var(s);
    a->terminal = b->terminal = true;
    for (int i = 0; i < 3; i++) {
      switch (orders[o][i]) {
      case 0: con_dim_ineq(s, dim_known(s, 3, NULL), a, NULL, NULL, NULL); break;
      case 1: con_dim_ineq(s, a, b, NULL, NULL, NULL); break;
      default: con_dim_ineq(s, dim_known(s, 5, NULL), b, NULL, NULL, NULL); break;
      }
      solver_run(s);
    }
    CHECK(solver_close(s), "order %d: %s", o, y.errbuf ? y.errbuf : "");
    CHECK(dim_size(a) == 3 && dim_size(b) == 1, "order %d: a = %d, b = %d", o, dim_size(a), dim_size(b));
    sys_free(&y);
  }
}

/* One row variable on both sides with shifted flanks: [x] v = v [y] and [x] v >= v [y]
 * wait for closing, which empties v and compares x with y. */
static void self_reference(void) {
  for (int ineq = 0; ineq < 2; ineq++)
    for (int y = 3; y <= 5; y += 2) {
      Sys sy;
      sys_init(&sy);
      Solver *s = &sy.s;
      RowVar *v = row_var(s, KIND_OUTPUT);
      DimNode *a = dim_known(s, 3, NULL), *b = dim_known(s, y, NULL);
      Row *l = row_open(s, 1, &a, v, 0, NULL), *r = row_open(s, 0, NULL, v, 1, &b);
      if (ineq) con_row_ineq(s, l, r, NULL, "l", "r");
      else con_row_eq(s, l, r, NULL, "l", "r");
      bool ok = solver_close(s);
      CHECK(ok == (y == 3), "%s [3]v vs v[%d]: %s", ineq ? "ineq" : "eq", y, ok ? "no error" : sy.errbuf);
      sys_free(&sy);
    }
}

/* ---- row inequalities, case by case (doc/inference.md, "Row inequalities")
 *
 * Rows are written as tokens: a number is a known dimension, a lowercase letter a
 * dimension variable, an uppercase letter a row variable (one per row); every variable
 * is terminal, so closing gives it its least upper bound. A rendering shows an unknown
 * dimension as `?` and an unsolved row variable as `*`. */

typedef struct Names { DimNode *dim[26]; RowVar *row[26]; } Names;

static Row *parse_row(Solver *s, Names *nm, const char *text) {
  DimNode *beg[16], *end[16];
  int nbeg = 0, nend = 0;
  RowVar *v = NULL;
  for (const char *p = text; *p;) {
    if (*p == ' ') { p++; continue; }
    if (*p >= 'A' && *p <= 'Z') {
      RowVar **r = &nm->row[*p++ - 'A'];
      if (!*r) *r = row_var(s, KIND_OUTPUT), (*r)->terminal = true;
      v = *r;
      continue;
    }
    DimNode *d;
    if (*p >= 'a' && *p <= 'z') {
      DimNode **slot = &nm->dim[*p++ - 'a'];
      if (!*slot) *slot = dim_var(s), (*slot)->terminal = true;
      d = *slot;
    } else {
      d = dim_known(s, (int)strtol(p, (char **)&p, 10), NULL);
    }
    if (v) end[nend++] = d;
    else beg[nbeg++] = d;
  }
  if (!v) return row_closed(s, nbeg, beg);
  return row_open(s, nbeg, beg, v, nend, end);
}

static const char *render_row(Solver *s, Row *r) {
  Row *n = row_norm(s, r);
  char buf[256];
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n->nbeg + n->nend; i++) {
    if (i == n->nbeg && n->var) len += (size_t)snprintf(buf + len, sizeof buf - len, "* ");
    int d = dim_size(i < n->nbeg ? n->beg[i] : n->end[i - n->nbeg]);
    len += d ? (size_t)snprintf(buf + len, sizeof buf - len, "%d ", d) : (size_t)snprintf(buf + len, sizeof buf - len, "? ");
  }
  if (n->var && n->nend == 0) len += (size_t)snprintf(buf + len, sizeof buf - len, "* ");
  if (len) buf[len - 1] = 0;
  return arena_strdup(s->a, buf);
}

/* cur >= subr, after an optional row equation pre_l = pre_r that solves a variable
 * first; the renderings after stage 1 and after closing, or the error expected. */
typedef struct IneqCase {
  const char *pre_l, *pre_r, *cur, *subr;
  const char *run_cur, *run_subr; /* after solver_run */
  const char *close_cur, *close_subr, *err; /* close_cur NULL: not checked */
} IneqCase;

static const IneqCase ineq_cases[] = {
    /* both closed: subr aligned to the right of cur */
    {NULL, NULL, "5 6 7", "6 7", "5 6 7", "6 7", "5 6 7", "6 7", NULL},
    {NULL, NULL, "5 6 7", "1 7", "5 6 7", "1 7", "5 6 7", "1 7", NULL},
    {NULL, NULL, "5 6 7", "5 7", NULL, NULL, NULL, NULL, "dimension mismatch: 6 vs 5"},
    {NULL, NULL, "3", "3 4", NULL, NULL, NULL, NULL, "cur has 1 axis, subr has 2"},
    /* subr closed, cur open: flanks meet flanks, the middle goes into cur's variable */
    {NULL, NULL, "a V b", "5 6 7", "5 * 6 7", "5 6 7", "5 6 7", "5 6 7", NULL},
    {NULL, NULL, "a V b", "9 5 6 7", "9 * 5 6 7", "9 5 6 7", "9 5 6 7", "9 5 6 7", NULL},
    /* a subr shorter than cur's flanks is aligned to the right over them */
    {NULL, NULL, "a V b c", "7", "? * ? 7", "7", "1 1 7", "7", NULL},
    {NULL, NULL, "a V b c", "4 7", "? * 4 7", "4 7", "1 4 7", "4 7", NULL},
    {NULL, NULL, "a b V c", "4 7", "? 4 * 7", "4 7", "1 4 7", "4 7", NULL},
    /* level by level: a solved variable's axes are not cur's flanks, so subr's only
     * axis meets a, cur's leftmost axis at its own level */
    {"V", "W x", "a V", "7", "7 * ?", "7", "7 1", "7", NULL},
    {"V", "x W", "a V", "5 6 7", "5 6 * 7", "5 6 7", "5 6 7", "5 6 7", NULL},
    /* an axis is named from the nearer end of the whole row, whatever its level */
    {"V", "4 3", "2 V", "2 5 3", NULL, NULL, NULL, NULL,
     "4 vs 5 (axis 2 from the end of cur vs axis 2 from the end of subr)"},
    /* cur closed, subr open: subr's flanks must fit, its variable takes the rest */
    {NULL, NULL, "5 6 7", "p U q", "5 6 7", "? * ?", "5 6 7", "5 6 7", NULL},
    {NULL, NULL, "5 7", "p U q", "5 7", "? ?", "5 7", "5 7", NULL},
    {NULL, NULL, "5 6 7", "U", "5 6 7", "*", "5 6 7", "5 6 7", NULL},
    {NULL, NULL, "5", "p U q", NULL, NULL, NULL, NULL, "cur has 1 axis, subr has at least 2"},
    {"U", "W 7", "5 6 7", "p U", "5 6 7", "? * 7", "5 6 7", "5 6 7", NULL},
    /* both open: common flanks are paired, subr's leftovers grow cur's variable */
    {NULL, NULL, "a V b", "2 U 3 4", "2 * 3 4", "2 * 3 4", "2 3 4", "2 3 4", NULL},
    {NULL, NULL, "2 V 4", "2 5 U 7 4", "2 5 * 7 4", "2 5 * 7 4", "2 5 7 4", "2 5 7 4", NULL},
    /* leftovers on both sides at opposite ends could land in either variable: wait */
    {NULL, NULL, "a b V", "U 7", "? ? *", "* 7", NULL, NULL, NULL},
    /* ... and closing empties subr's variable first (stage 6): 5 then meets 4 */
    {NULL, NULL, "2 V 3 4", "2 5 U", "2 * 3 4", "2 5 *", NULL, NULL, "dimension mismatch: 4 vs 5"},
    /* only cur has leftovers: subr's variable is bounded above by cur (closing: a and b
     * have no bound, 1; U takes its least upper bound, what is left of cur) */
    {NULL, NULL, "a V b 3", "U 3", "? * ? 3", "* 3", "1 1 3", "1 1 3", NULL},
    /* both open, the pair at cur's second level: named by its place in the whole rows */
    {"V", "3 W", "2 V", "2 5 U", NULL, NULL, NULL, NULL, "3 vs 5 (axis 1 of cur vs axis 1 of subr)"},
    {"V", "W 3", "V 2", "U 5 2", NULL, NULL, NULL, NULL,
     "3 vs 5 (axis 2 from the end of cur vs axis 2 from the end of subr)"},
    /* one variable on both sides, shifted flanks: wait, closing empties it */
    {NULL, NULL, "3 V", "V 3", "3 *", "* 3", "3", "3", NULL},
};

static void row_inequalities(void) {
  for (size_t i = 0; i < sizeof ineq_cases / sizeof *ineq_cases; i++) {
    const IneqCase *k = &ineq_cases[i];
    Sys y;
    sys_init(&y);
    Solver *s = &y.s;
    Names nm = {0};
    bool ok = true;
    if (k->pre_l) {
      con_row_eq(s, parse_row(s, &nm, k->pre_l), parse_row(s, &nm, k->pre_r), NULL, "pre", "pre");
      ok = solver_run(s);
    }
    Row *cur = parse_row(s, &nm, k->cur), *sub = parse_row(s, &nm, k->subr);
    con_row_ineq(s, cur, sub, NULL, "cur", "subr");
    ok = ok && solver_run(s);
    if (ok && k->run_cur) {
      const char *rc = render_row(s, cur), *rs = render_row(s, sub);
      CHECK(!strcmp(rc, k->run_cur) && !strcmp(rs, k->run_subr), "%s >= %s: after stage 1 '%s' >= '%s', want '%s' >= '%s'",
            k->cur, k->subr, rc, rs, k->run_cur, k->run_subr);
    }
    if (k->err || k->close_cur) ok = ok && solver_close(s);
    fflush(y.errf);
    if (k->err) {
      CHECK(!ok && y.errbuf && strstr(y.errbuf, k->err), "%s >= %s: want error '%s', got '%s'", k->cur, k->subr,
            k->err, ok ? "no error" : y.errbuf);
    } else if (!ok) {
      CHECK(false, "%s >= %s: %s", k->cur, k->subr, y.errbuf ? y.errbuf : "");
    } else if (k->close_cur) {
      const char *rc = render_row(s, cur), *rs = render_row(s, sub);
      CHECK(!strcmp(rc, k->close_cur) && !strcmp(rs, k->close_subr), "%s >= %s: closed '%s' >= '%s', want '%s' >= '%s'",
            k->cur, k->subr, rc, rs, k->close_cur, k->close_subr);
    }
    sys_free(&y);
  }
}

/* n elements in a tensor of output row [3] and an open terminal batch row: the batch
 * row takes the rest. */
static void total_over_three(long long n, const char *want_batch) {
  Sys y;
  sys_init(&y);
  Solver *s = &y.s;
  int three[] = {3};
  Row *rows[3] = {var_row(s, true), row_closed(s, 0, NULL), known_row(s, 1, three)};
  con_total(s, rows, rows[0]->var, n, NULL, "file");
  char buf[128];
  CHECK(solver_close(s), "%s", y.errbuf);
  row_str(s, rows[0], buf, sizeof buf);
  CHECK(!strcmp(buf, want_batch), "total %lld over 3: batch '%s', want '%s'", n, buf, want_batch);
  sys_free(&y);
}

static void totals(void) {
  total_over_three(12, "4");
  total_over_three(3, "");
  Sys y;
  sys_init(&y);
  Solver *s = &y.s;
  int three[] = {3};
  DimNode *u = dim_var(s);
  Row *r3[3] = {row_closed(s, 0, NULL), row_closed(s, 0, NULL), row_closed(s, 1, &u)};
  con_total(s, r3, NULL, 7, NULL, "file");
  CHECK(solver_close(s) && dim_size(u) == 7, "total solves the last dim: %d", dim_size(u));
  sys_free(&y);

  sys_init(&y);
  s = &y.s;
  Row *r4[3] = {row_closed(s, 0, NULL), row_closed(s, 0, NULL), known_row(s, 1, three)};
  con_total(s, r4, NULL, 7, NULL, "file");
  CHECK(!solver_close(s), "7 elements in a 3-shape must fail");
  sys_free(&y);
}

/* in, out, kernel sizes (0 = unknown); expects the solved triple or failure. */
static void conv1(bool padded, int stride, int dil, int in, int out, int ker, int win, int wout, int wker, bool ok) {
  Sys y;
  sys_init(&y);
  Solver *s = &y.s;
  DimNode *a = in ? dim_known(s, in, NULL) : dim_var(s);
  DimNode *b = out ? dim_known(s, out, NULL) : dim_var(s);
  DimNode *k = ker ? dim_known(s, ker, NULL) : dim_var(s);
  con_conv(s, a, b, k, stride, dil, padded, NULL, "conv");
  bool r = solver_run(s);
  CHECK(r == ok, "conv %s s=%d d=%d %d,%d,%d: %s", padded ? "padded" : "valid", stride, dil, in, out, ker,
        y.errbuf ? y.errbuf : "");
  if (r && ok)
    CHECK(dim_size(a) == win && dim_size(b) == wout && dim_size(k) == wker, "conv solved %d,%d,%d want %d,%d,%d",
          dim_size(a), dim_size(b), dim_size(k), win, wout, wker);
  sys_free(&y);
}

static void convs(void) {
  conv1(false, 1, 1, 6, 0, 3, 6, 4, 3, true);  /* 6 = (o-1) + 3 */
  conv1(false, 1, 2, 7, 0, 3, 7, 3, 3, true);  /* dilation 2 */
  conv1(false, 2, 1, 9, 0, 3, 9, 4, 3, true);  /* stride 2 */
  conv1(false, 2, 1, 4, 0, 2, 4, 2, 2, true);  /* OCANNL's 4x4 example */
  conv1(false, 2, 1, 5, 0, 2, 0, 0, 0, false); /* 5 = 2*(o-1) + 2 has no solution */
  conv1(false, 1, 1, 2, 0, 3, 0, 0, 0, false); /* kernel larger than the input */
  conv1(false, 1, 1, 0, 4, 3, 6, 4, 3, true);  /* input from output and kernel */
  conv1(false, 1, 1, 6, 4, 0, 6, 4, 3, true);  /* kernel from input and output */
  conv1(true, 1, 1, 5, 0, 3, 5, 5, 3, true);   /* padded: same size */
  conv1(true, 2, 1, 8, 0, 3, 8, 4, 3, true);   /* padded, stride 2 */
  conv1(true, 2, 1, 0, 3, 3, 6, 3, 3, true);
  conv1(true, 2, 1, 7, 0, 3, 0, 0, 0, false);  /* 7 is not 2*o */
}

/* ---- order independence: a fixed system, many permutations of its constraints */

enum { NT = 8 };
typedef struct PItem { int kind; int a, b, ka, kb; } PItem; /* row ineq/eq between tensor rows */

static void render(Solver *s, Row *rows[NT][3], char *out, size_t cap) {
  size_t len = 0;
  for (int t = 0; t < NT; t++)
    for (int k = 0; k < 3; k++) {
      char buf[128];
      row_str(s, rows[t][k], buf, sizeof buf);
      len += (size_t)snprintf(out + len, cap - len, "%s%s", buf, k == 2 ? ";" : "|");
    }
}

/* rows[t] is b, i, o in the order tensors are written (b|i->o), not KIND_* order: the
 * solver never looks at kinds.
 * tensors: 0 x (5|->2) 1 target (5|->3) 2 b1 (param, o=8) 3 w1 (param) 4 w1*x
 *          5 h = b1 + 4 6 w2 (param) 7 out = w2 * h (and out - target through 7 >= 1) */
static void build_rows(Solver *s, Row *rows[NT][3]) {
  int five[] = {5}, two[] = {2}, three[] = {3}, eight[] = {8};
  rows[0][0] = known_row(s, 1, five), rows[0][1] = row_closed(s, 0, NULL), rows[0][2] = known_row(s, 1, two);
  rows[1][0] = known_row(s, 1, five), rows[1][1] = row_closed(s, 0, NULL), rows[1][2] = known_row(s, 1, three);
  rows[2][0] = row_closed(s, 0, NULL), rows[2][1] = var_row(s, true), rows[2][2] = known_row(s, 1, eight);
  rows[3][0] = row_closed(s, 0, NULL), rows[3][1] = var_row(s, true), rows[3][2] = var_row(s, true);
  rows[6][0] = row_closed(s, 0, NULL), rows[6][1] = var_row(s, true), rows[6][2] = var_row(s, true);
  for (int t = 4; t < NT; t++)
    if (t != 6)
      for (int k = 0; k < 3; k++) rows[t][k] = var_row(s, false);
}

static const PItem items[] = {
    /* 4 = w1 * x */
    {0, 4, 3, 0, 0}, {0, 4, 0, 0, 0}, {0, 4, 0, 1, 1}, {0, 4, 3, 2, 2}, {0, 3, 0, 1, 2},
    /* 5 = b1 + 4 */
    {0, 5, 2, 0, 0}, {0, 5, 2, 1, 1}, {0, 5, 2, 2, 2}, {0, 5, 4, 0, 0}, {0, 5, 4, 1, 1}, {0, 5, 4, 2, 2},
    /* 7 = w2 * 5 */
    {0, 7, 6, 0, 0}, {0, 7, 5, 0, 0}, {0, 7, 5, 1, 1}, {0, 7, 6, 2, 2}, {0, 6, 5, 1, 2},
    /* 7 >= target (as if a %cd step wrote out - target into out) */
    {0, 7, 1, 0, 0}, {0, 7, 1, 1, 1}, {0, 7, 1, 2, 2},
};
enum { NITEMS = sizeof items / sizeof *items };

static bool solve_perm(const int *perm, bool online, char *out, size_t cap) {
  Sys y;
  sys_init(&y);
  Solver *s = &y.s;
  Row *rows[NT][3];
  build_rows(s, rows);
  for (int i = 0; i < NITEMS; i++) {
    const PItem *it = &items[perm[i]];
    con_row_ineq(s, rows[it->a][it->ka], rows[it->b][it->kb], NULL, "cur", "subr");
    if (online) solver_run(s);
  }
  bool ok = solver_close(s);
  if (ok) render(s, rows, out, cap);
  else snprintf(out, cap, "error: %s", y.errbuf ? y.errbuf : "");
  sys_free(&y);
  return ok;
}

static void order_independence(void) {
  int perm[NITEMS];
  for (int i = 0; i < NITEMS; i++) perm[i] = i;
  char want[2048], got[2048];
  CHECK(solve_perm(perm, true, want, sizeof want), "%s", want);
  CHECK(strstr(want, "|2|8;") != NULL, "w1 should be 2->8: %s", want); /* w1 = tensor 3 */
  for (int round = 0; round < 300; round++) {
    for (int i = NITEMS - 1; i > 0; i--) {
      int j = (int)rnd((unsigned)i + 1), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    solve_perm(perm, round & 1, got, sizeof got);
    CHECK(!strcmp(got, want), "permutation %d gives\n  %s\nnot\n  %s", round, got, want);
  }
}

/* ---- termination on random systems */

static Row *random_row(Solver *s, DimNode **pool, int npool, RowVar **rpool, int nrpool) {
  DimNode *beg[4], *end[4];
  int nb = (int)rnd(3), ne = (int)rnd(4);
  for (int i = 0; i < nb; i++) beg[i] = pool[rnd((unsigned)npool)];
  for (int i = 0; i < ne; i++) end[i] = pool[rnd((unsigned)npool)];
  if (rnd(3) == 0) return row_open(s, 0, NULL, NULL, ne, end);
  return row_open(s, nb, beg, rpool[rnd((unsigned)nrpool)], ne, end);
}

static void random_systems(void) {
  int nok = 0;
  for (int round = 0; round < 3000; round++) {
    Sys y;
    sys_init(&y);
    Solver *s = &y.s;
    DimNode *pool[12];
    RowVar *rpool[5];
    int npool = 3 + (int)rnd(9), nr = 1 + (int)rnd(5);
    for (int i = 0; i < npool; i++) {
      pool[i] = rnd(2) ? dim_var(s) : dim_known(s, 1 + (int)rnd(4), rnd(5) == 0 ? "l" : NULL);
      pool[i]->terminal = rnd(2);
    }
    for (int i = 0; i < nr; i++) {
      rpool[i] = row_var(s, (int)rnd(3));
      rpool[i]->terminal = rnd(2);
    }
    int ncons = 1 + (int)rnd(12);
    for (int i = 0; i < ncons; i++) {
      switch (rnd(7)) {
      case 0: con_dim_eq(s, pool[rnd((unsigned)npool)], pool[rnd((unsigned)npool)], NULL, NULL, NULL); break;
      case 1: con_dim_ineq(s, pool[rnd((unsigned)npool)], pool[rnd((unsigned)npool)], NULL, NULL, NULL); break;
      case 2:
        con_row_eq(s, random_row(s, pool, npool, rpool, nr), random_row(s, pool, npool, rpool, nr), NULL, NULL, NULL);
        break;
      case 3:
      case 4:
        con_row_ineq(s, random_row(s, pool, npool, rpool, nr), random_row(s, pool, npool, rpool, nr), NULL, NULL,
                     NULL);
        break;
      case 5:
        con_conv(s, pool[rnd((unsigned)npool)], pool[rnd((unsigned)npool)], pool[rnd((unsigned)npool)],
                 1 + (int)rnd(2), 1 + (int)rnd(2), rnd(2), NULL, "conv");
        break;
      default: {
        Row *rows[3] = {random_row(s, pool, npool, rpool, nr), random_row(s, pool, npool, rpool, nr),
                        random_row(s, pool, npool, rpool, nr)};
        if (rnd(2)) con_at_least(s, pool[rnd((unsigned)npool)], 1 + (int)rnd(4), NULL, NULL);
        else con_total(s, rows, rows[0]->var, 1 + (int)rnd(24), NULL, "total");
      }
      }
    }
    bool ok = solver_close(s);
    nok += ok;
    if (ok) /* a success leaves no variable behind */
      for (int i = 0; i < s->dims.len; i++) {
        DimNode *d = VEC_AT(s->dims, DimNode, i);
        CHECK(dim_size(d) > 0, "round %d: dim %d unsolved after a successful close", round, i);
      }
    sys_free(&y);
  }
  printf("random systems: %d of 3000 satisfiable\n", nok);
  CHECK(nok > 100 && nok < 2900, "the generator should give both outcomes: %d", nok);
}

/* ---- projection classes: a union takes the strongest kind (ClassKind order), in either
 * argument order; a mark never weakens a class; the larger dimension is the class's. */
static void mark_as(ProjCtx *p, int node, ClassKind k, Constraint *aff) {
  if (k != CL_ITER) pc_mark(p, node, k, 10 + (int)k, aff);
}

static void projection_classes(void) {
  for (int ka = CL_ITER; ka <= CL_SYM; ka++)
    for (int kb = CL_ITER; kb <= CL_SYM; kb++)
      for (int order = 0; order < 2; order++) {
        Sys y;
        sys_init(&y);
        Solver *s = &y.s;
        DimNode *da = dim_known(s, 2, NULL), *db = dim_known(s, 5, NULL);
        Constraint affa = {0}, affb = {0};
        ProjCtx p;
        pc_init(&p, s);
        int a = pc_node(&p, 0, da), b = pc_node(&p, 1, db);
        mark_as(&p, a, (ClassKind)ka, &affa);
        mark_as(&p, b, (ClassKind)kb, &affb);
        if (order) pc_union(&p, b, a);
        else pc_union(&p, a, b);
        ProjNode *r = &p.node[pc_find(&p, a)];
        ClassKind want = (ClassKind)(ka > kb ? ka : kb);
        CHECK(pc_find(&p, a) == pc_find(&p, b), "one class");
        CHECK(r->kind == want, "kinds %d, %d (order %d): class kind %d, want %d", ka, kb, order, r->kind, want);
        if (want != CL_ITER) {
          CHECK(r->fixed == 10 + (int)want, "kinds %d, %d: the stronger member's index", ka, kb);
          if (ka != kb) CHECK(r->aff == (ka > kb ? &affa : &affb), "kinds %d, %d: the stronger member's aff", ka, kb);
        }
        CHECK(r->size == 5, "size %d", r->size);
        pc_free(&p);
        sys_free(&y);
      }
  Sys y;
  sys_init(&y);
  DimNode *d = dim_var(&y.s);
  ProjCtx p;
  pc_init(&p, &y.s);
  int n = pc_node(&p, 0, d);
  pc_mark(&p, n, CL_SYM, 0, NULL);
  pc_mark(&p, n, CL_AFFINE, 0, NULL);
  CHECK(p.node[n].kind == CL_SYM, "a weaker mark leaves the class: %d", p.node[n].kind);
  int m = pc_node(&p, 1, dim_var(&y.s));
  pc_mark(&p, m, CL_FIXED, 2, NULL);
  pc_mark(&p, m, CL_FIXED, 3, NULL);
  CHECK(p.node[m].fixed == 2, "the first fixed index stays: %d", p.node[m].fixed);
  p.ns[2] = 2;
  CHECK(pc_node(&p, 0, d) == n && pc_node(&p, 2, d) != n, "a repeated tensor's slot has its own nodes");
  pc_free(&p);
  sys_free(&y);
}

/* Dimension 0 is a known size (an empty axis), never "unknown" (tdsl(7), Empty tensors):
 * it binds variables, is a least upper bound of its own, does not broadcast, and two
 * bounds 0 and 3 leave only 1. */
static void empty_dims(void) {
  Sys y;
  /* a variable equal to 0 is solved: 0 */
  sys_init(&y);
  Solver *s = &y.s;
  DimNode *v = dim_var(s);
  con_dim_eq(s, v, dim_known(s, 0, NULL), NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_is_known(v) && dim_size(v) == 0, "eq 0: %d", dim_size(v));
  sys_free(&y);
  /* a terminal variable below 0 closes to its LUB 0, not to 1 */
  sys_init(&y);
  s = &y.s;
  v = dim_var(s);
  v->terminal = true;
  con_dim_ineq(s, dim_known(s, 0, NULL), v, NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 0, "terminal LUB 0: %d", dim_size(v));
  sys_free(&y);
  /* an unknown cur above a 0: cur is 0 (0 does not broadcast) */
  sys_init(&y);
  s = &y.s;
  v = dim_var(s);
  con_dim_ineq(s, v, dim_known(s, 0, NULL), NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 0, "cur above 0: %d", dim_size(v));
  sys_free(&y);
  /* 1 broadcasts into 0 */
  sys_init(&y);
  s = &y.s;
  con_dim_ineq(s, dim_known(s, 0, NULL), dim_known(s, 1, NULL), NULL, NULL, NULL);
  CHECK(solver_close(s), "1 into 0: %s", sys_errors(&y));
  sys_free(&y);
  /* 0 does not broadcast into 3, nor 3 into 0 */
  for (int k = 0; k < 2; k++) {
    sys_init(&y);
    s = &y.s;
    con_dim_ineq(s, dim_known(s, k ? 0 : 3, NULL), dim_known(s, k ? 3 : 0, NULL), NULL, NULL, NULL);
    CHECK(!solver_close(s) && strstr(sys_errors(&y), "dimension mismatch"), "0 vs 3 (%d): %s", k, sys_errors(&y));
    sys_free(&y);
  }
  /* below 0 and below 3: only 1 fits both */
  sys_init(&y);
  s = &y.s;
  v = dim_var(s);
  v->terminal = true;
  con_dim_ineq(s, dim_known(s, 0, NULL), v, NULL, NULL, NULL);
  con_dim_ineq(s, dim_known(s, 3, NULL), v, NULL, NULL, NULL);
  CHECK(solver_close(s) && dim_size(v) == 1, "bounds 0 and 3: %d", dim_size(v));
  sys_free(&y);
  /* a fixed index reads no axis of size 0 */
  sys_init(&y);
  s = &y.s;
  con_at_least(s, dim_known(s, 0, NULL), 1, NULL, NULL);
  CHECK(!solver_close(s) && strstr(sys_errors(&y), "is out of range: the axis is empty"), "%s", sys_errors(&y));
  sys_free(&y);
}

int main(void) {
  projection_classes();
  lubs();
  interleave();
  self_reference();
  row_inequalities();
  totals();
  convs();
  order_independence();
  random_systems();
  empty_dims();
  return tk_exit("test_infer_solver");
}
