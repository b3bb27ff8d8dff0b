/* ast_ndlit.c: packed ndarray literals (E_NDLIT, ast.h). A big literal pasted as
 * weights cost ~1 KB of compiler memory per number on the token path (a token, its
 * spelling, an AST node, a parser value, a staging value); packed it costs its double.
 *
 * One walk over the literal's text serves three purposes: checking that it is packable
 * (the shape is discovered on the leftmost path, every other node is compared with it),
 * filling the values (a second walk, once the count is known), and rebuilding the tree
 * the parser would have built from the tokens (ndlit_expand). It accepts only what the
 * per-token path parses without error into the same tree: brackets `[ ; ]` and
 * `[| ; |]` (a trailing `;` allowed), comma tuples, parenthesized tuples of two or more
 * elements, numbers as the lexer reads them with an optional `-` (folded into the
 * number by the parser). Anything else (a comment, an identifier, an operator, a
 * malformed or out-of-range number, a ragged row) makes it give up: the lexer then
 * reads the bracket token by token and reports what is wrong exactly as before. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"

typedef struct Walk {
  const char *p, *lim, *line_start;
  int line;
  const SrcFile *file;
  NdLit *lit;                            /* the shape being discovered or checked */
  bool kind_set[NDLIT_MAX_AXES], dim_set[NDLIT_MAX_AXES];
  int leaf;                              /* the numbers' level, -1 before the first */
  long long n;                           /* numbers read */
  double *values;                        /* NULL: only count */
  Arena *build;                          /* non-NULL: build the parser's tree */
} Walk;

static int peek(const Walk *w, int k) { return w->p + k < w->lim ? (unsigned char)w->p[k] : 0; }

static Loc here(const Walk *w) {
  Loc l = {w->file, w->line, (int)(w->p - w->line_start) + 1};
  return l;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

static bool is_ident_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' || c == '\'';
}

/* Blanks and line breaks, counted as the lexer counts them (src_eol); false at a
 * comment: its text is not kept in the tree, so a commented literal stays tokens. */
static bool skip_space(Walk *w) {
  for (;;) {
    int c = peek(w, 0);
    if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
      w->p++;
    } else if (c == '\n' || c == '\r') {
      w->p += c == '\r' && peek(w, 1) == '\n' ? 2 : 1;
      w->line++;
      w->line_start = w->p;
    } else {
      return !((c == '(' && peek(w, 1) == '*') || (c == '/' && peek(w, 1) == '/'));
    }
  }
}

static int max_of(int a, int b) { return a > b ? a : b; }

/* A node of kind k starts at level: the first one sets the level's kind. */
static bool enter(Walk *w, int level, NdAxis k) {
  if (level >= NDLIT_MAX_AXES || (w->leaf >= 0 && level >= w->leaf)) return false;
  if (!w->kind_set[level]) {
    w->kind_set[level] = true;
    w->lit->kind[level] = k;
  }
  return w->lit->kind[level] == k;
}

/* A node of count elements, located at loc, ends: the first one at its level (the
 * leftmost: it ends before any other of its level starts) sets the dimension. */
static bool leave(Walk *w, int level, int count, Loc loc) {
  if (count < 1) return false;
  if (!w->dim_set[level]) {
    w->dim_set[level] = true;
    w->lit->dim[level] = count;
    w->lit->first[level] = loc;
  }
  return w->lit->dim[level] == count;
}

static Expr *node(Walk *w, ExprKind k, Loc loc, int height) {
  Expr *e = ANEW(w->build, Expr);
  e->kind = k;
  e->loc = loc;
  e->depth = height;
  return e;
}

/* The end of the number spelled from s (the lexer's `dec`, `dec "." [0-9]* exp?`,
 * `dec exp`); *is_float when it is a float. */
static const char *number_end(const char *s, const char *lim, bool *is_float) {
  const char *p = s;
  while (p < lim && is_digit(*p)) p++;
  *is_float = false;
  if (p < lim && *p == '.') {
    *is_float = true;
    for (p++; p < lim && is_digit(*p);) p++;
  }
  const char *q = p;
  if (q < lim && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < lim && (*q == '+' || *q == '-')) q++;
    if (q < lim && is_digit(*q)) {
      while (q < lim && is_digit(*q)) q++;
      p = q;
      *is_float = true;
    }
  }
  return p;
}

/* A number, `-` before it allowed: height 1, 0 when not a plain number. */
static int number(Walk *w, int level, Loc *loc, Expr **out) {
  *loc = here(w);
  bool neg = peek(w, 0) == '-';
  if (neg) {
    w->p++;
    if (!skip_space(w)) return 0;
  }
  if (!is_digit(peek(w, 0))) return 0;
  bool is_float;
  const char *s = w->p, *e = number_end(s, w->lim, &is_float);
  char buf[64];
  if (e - s >= (long)sizeof buf || (e < w->lim && is_ident_char((unsigned char)*e))) return 0;
  memcpy(buf, s, (size_t)(e - s));
  buf[e - s] = 0;
  w->p = e;
  errno = 0;
  long long iv = is_float ? 0 : strtoll(buf, NULL, 10);
  if (!is_float && errno == ERANGE) return 0;
  double v = is_float ? strtod(buf, NULL) : (double)(neg ? -iv : iv);
  if (is_float && neg) v = -v;
  if (w->leaf < 0) {
    w->leaf = level;
    w->lit->first[level] = *loc;
  }
  if (w->leaf != level) return 0;
  if (w->values) w->values[w->n] = v;
  w->n++;
  if (out) {
    *out = node(w, is_float ? E_FLOAT : E_INT, *loc, 1);
    (*out)->ival = neg ? -iv : iv;
    if (is_float) (*out)->fval = v;
    if (is_float) (*out)->str = neg ? arena_printf(w->build, "-%s", buf) : arena_strdup(w->build, buf);
  }
  return 1;
}

static int group(Walk *w, int level, Loc *loc, Expr **out);

static int element(Walk *w, int level, Loc *loc, Expr **out) {
  int c = peek(w, 0);
  return c == '[' || c == '(' ? group(w, level, loc, out) : number(w, level, loc, out);
}

/* Whether the element at w->p is followed by a comma (making a tuple) before its item
 * ends: it reads the first element twice, not the whole item. A character no
 * literal has ends the look early (the walk then fails at it anyway). */
static bool comma_follows(const Walk *w) {
  int depth = 0;
  for (const char *p = w->p; p < w->lim; p++) {
    switch (*p) {
    case '[': case '(': depth++; break;
    case ']': case ')': if (depth-- == 0) return false; break;
    case ',': if (!depth) return true; break;
    case ';': if (!depth) return false; break;
    default:
      if (!strchr(" \t\f\v\r\n0123456789eE.+-|", *p)) return false;
    }
  }
  return false;
}

/* Elements separated by commas: a tuple node at level (at least two elements). Its
 * location is its first element's, as the parser's `tuple` takes it. */
static int tuple_elems(Walk *w, int level, Loc *loc, Expr **out, char closer) {
  if (!enter(w, level, ND_TUPLE)) return 0;
  PtrVec items = {0};
  int count = 0, height = 0;
  for (;;) {
    Loc at;
    Expr *x = NULL;
    int h = element(w, level + 1, &at, out ? &x : NULL);
    if (!h || !skip_space(w)) return 0;
    if (!count) *loc = at;
    count++;
    height = max_of(height, h);
    if (out) vec_push(w->build, &items, x);
    if (peek(w, 0) != ',') break;
    w->p++;
    if (!skip_space(w)) return 0;
  }
  if (count < 2 || !leave(w, level, count, *loc)) return 0;
  if (closer) {
    if (peek(w, 0) != closer) return 0;
    w->p++;
  }
  if (out) {
    *out = node(w, E_TUPLE, *loc, height + 1);
    (*out)->items = items;
    (*out)->paren = closer != 0;
  }
  return height + 1;
}

/* One item of a list or array: a tuple, or a single element at this level. */
static int item(Walk *w, int level, Loc *loc, Expr **out) {
  if (level >= NDLIT_MAX_AXES) return 0;
  /* Looked at for every item: `(1, 2)` is a tuple at this level, `(1, 2), (3, 4)` one
   * of tuples. */
  bool tuple = !(w->leaf >= 0 && level >= w->leaf) && comma_follows(w);
  return tuple ? tuple_elems(w, level, loc, out, 0) : element(w, level, loc, out);
}

/* `[ items ]`, `[| items |]` (located at the bracket) or `( a, b, ... )` (at a). */
static int group(Walk *w, int level, Loc *loc, Expr **out) {
  if (peek(w, 0) == '(') {
    if (peek(w, 1) == '*') return 0;
    w->p++;
    return skip_space(w) ? tuple_elems(w, level, loc, out, ')') : 0;
  }
  bool array = peek(w, 1) == '|';
  *loc = here(w);
  w->p += array ? 2 : 1;
  if (!enter(w, level, array ? ND_ARRAY : ND_LIST)) return 0;
  PtrVec items = {0};
  int count = 0, height = 0;
  for (;;) {
    if (!skip_space(w)) return 0;
    if (array ? peek(w, 0) == '|' && peek(w, 1) == ']' : peek(w, 0) == ']') break;
    Loc at;
    Expr *x = NULL;
    int h = item(w, level + 1, &at, out ? &x : NULL);
    if (!h || !skip_space(w)) return 0;
    count++;
    height = max_of(height, h);
    if (out) vec_push(w->build, &items, x);
    if (peek(w, 0) != ';' || peek(w, 1) == ';') break; /* `;;` ends an item of the file */
    w->p++;
  }
  if (array ? !(peek(w, 0) == '|' && peek(w, 1) == ']') : peek(w, 0) != ']') return 0;
  w->p += array ? 2 : 1;
  if (!leave(w, level, count, *loc)) return 0;
  if (out) {
    *out = node(w, array ? E_ARRAY : E_LIST, *loc, height + 1);
    (*out)->items = items;
  }
  return height + 1;
}

static Walk walk_at(NdLit *lit, Loc loc, const char *text, const char *lim) {
  Walk w = {0};
  w.p = text;
  w.lim = lim;
  w.line = loc.line;
  w.line_start = text - (loc.col - 1);
  w.file = loc.file;
  w.lit = lit;
  w.leaf = -1;
  return w;
}

NdLit *ndlit_scan(Arena *a, Loc loc, const char *text, const char *lim, const char **end, int *line,
                  const char **line_start) {
  NdLit probe = {0};
  Walk w = walk_at(&probe, loc, text, lim);
  Loc at;
  if (!group(&w, 0, &at, NULL) || w.n < NDLIT_MIN_NUMBERS) return NULL;
  NdLit *lit = ANEW(a, NdLit);
  long long n = w.n;
  double *values = ANEWN(a, double, n);
  w = walk_at(lit, loc, text, lim);
  w.values = values;
  lit->depth = group(&w, 0, &at, NULL);
  lit->naxes = w.leaf;
  lit->values = values;
  lit->n = n;
  lit->text = text;
  lit->len = (int)(w.p - text);
  lit->loc = loc;
  *end = w.p;
  *line = w.line;
  *line_start = w.line_start;
  return lit;
}

Expr *ndlit_expand(Arena *a, const NdLit *lit) {
  NdLit shape = {0};
  Walk w = walk_at(&shape, lit->loc, lit->text, lit->text + lit->len);
  w.build = a;
  Loc at;
  Expr *e = NULL;
  group(&w, 0, &at, &e);
  return e;
}
