/* diag.c: prints located diagnostics with the offending source line and a caret. */
#include "diag.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, FILE *out) {
  memset(d, 0, sizeof *d);
  d->out = out;
  d->max_errors = 20;
}

bool diag_full(const Diag *d) { return d->errors >= d->max_errors; }

/* Finds the start and length of line `line` (1-based) in f, without its line break
 * (LF, CRLF or a lone CR: src_eol). */
static const char *line_start(const SrcFile *f, int line, int *len) {
  const char *p = f->text, *end = f->text + f->len;
  for (int l = 1; l < line && p < end; p++)
    if (src_eol(p, end)) l++;
  const char *q = p;
  while (q < end && *q != '\n' && *q != '\r') q++;
  *len = (int)(q - p);
  return p;
}

/* The UTF-8 sequence at s[0..n): its length, or 0 when it is not valid UTF-8 (a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
static int utf8_seq(const unsigned char *s, size_t n, unsigned *cp) {
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!len || (size_t)len > n) return 0;
  unsigned v = len == 1 ? c : c & (0x7fu >> len);
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3fu);
  }
  if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return len;
}

/* Terminal columns of a code point: 0 for combining marks and zero-width characters,
 * 2 for East Asian wide ones and emoji, else 1 (what wcwidth says, without a locale). */
static int cp_width(unsigned c) {
  if ((c >= 0x300 && c <= 0x36f) || (c >= 0x200b && c <= 0x200f) || (c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff)
    return 0;
  if ((c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf && c != 0x303f) || (c >= 0xac00 && c <= 0xd7a3) ||
      (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
      (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1faff) || (c >= 0x20000 && c <= 0x3fffd))
    return 2;
  return 1;
}

/* Whether a code point is a control character (C0, DEL, C1): a terminal would act on it. */
static bool cp_control(unsigned c) { return c < 0x20 || (c >= 0x7f && c < 0xa0); }

/* Characters users paste from documents and chat: what they look like in ASCII. */
static const struct Lookalike {
  unsigned lo, hi;
  const char *kind; /* NULL: visible, shown quoted */
  const char *hint;
} lookalikes[] = {
    {0x00a0, 0x00a0, "a no-break space", ": write a plain space"},
    {0x2000, 0x200a, "a typographic space", ": write a plain space"},
    {0x202f, 0x202f, "a narrow no-break space", ": write a plain space"},
    {0x205f, 0x205f, "a typographic space", ": write a plain space"},
    {0x3000, 0x3000, "an ideographic space", ": write a plain space"},
    {0x200b, 0x200f, "an invisible formatting character", ": delete it"},
    {0x2060, 0x2064, "an invisible formatting character", ": delete it"},
    {0xfeff, 0xfeff, "an invisible byte order mark", ": delete it"},
    {0x00ad, 0x00ad, "an invisible soft hyphen", ": delete it"},
    {0x2018, 0x201b, NULL, ": write the ASCII quote '"},
    {0x2032, 0x2032, NULL, ": write the ASCII quote '"},
    {0x201c, 0x201f, NULL, ": write the ASCII quote \""},
    {0x00ab, 0x00ab, NULL, ": write the ASCII quote \""},
    {0x00bb, 0x00bb, NULL, ": write the ASCII quote \""},
    {0x2010, 0x2015, NULL, ": write the ASCII '-'"},
    {0x2212, 0x2212, NULL, ": write the ASCII '-'"},
    {0x00d7, 0x00d7, NULL, ": write '*' (or '*.' pointwise)"},
    {0x2026, 0x2026, NULL, ": write the three dots '...'"},
    {0x2192, 0x2192, NULL, ": write '->'"},
    {0x21d2, 0x21d2, NULL, ": write '=>'"},
};

const char *diag_char_desc(Arena *a, const unsigned char *s, size_t n, int *len, const char **hint) {
  unsigned cp = 0;
  *hint = "";
  *len = utf8_seq(s, n, &cp);
  if (!*len) {
    *len = 1;
    return arena_printf(a, "'\\x%02x'", s[0]);
  }
  if (cp < 0x80) return cp >= 0x20 && cp < 0x7f ? arena_printf(a, "'%c'", (int)cp) : arena_printf(a, "'\\x%02x'", cp);
  for (size_t i = 0; i < sizeof lookalikes / sizeof *lookalikes; i++) {
    const struct Lookalike *l = &lookalikes[i];
    if (cp < l->lo || cp > l->hi) continue;
    *hint = l->hint;
    if (l->kind) return arena_printf(a, "U+%04X (%s)", cp, l->kind);
    break;
  }
  if (cp_control(cp)) return arena_printf(a, "U+%04X (a control character)", cp);
  if (!cp_width(cp)) return arena_printf(a, "U+%04X (a combining or zero-width character)", cp);
  return arena_printf(a, "'%.*s' (U+%04X)", *len, (const char *)s, cp);
}

/* Writes the unit (one character, or one byte that is not valid UTF-8) at s[0..n)
 * to out as the echoed source shows it, control characters and invalid bytes
 * escaped (\xNN per byte) so that they neither act on the terminal nor make the output
 * invalid UTF-8; tabs are kept (the caret line repeats them). Returns the unit's length
 * in bytes and sets *cols to the columns it takes (-1 for a tab). */
static int put_unit(FILE *out, const unsigned char *s, size_t n, int *cols) {
  unsigned cp = 0;
  int len = utf8_seq(s, n, &cp);
  if (len && s[0] == '\t') {
    if (out) fputc('\t', out);
    *cols = -1;
    return 1;
  }
  if (!len || cp_control(cp)) {
    int k = len ? len : 1;
    for (int i = 0; out && i < k; i++) fprintf(out, "\\x%02x", s[i]);
    *cols = 4 * k;
    return k;
  }
  if (out) fwrite(s, 1, (size_t)len, out);
  *cols = cp_width(cp);
  return len;
}

/* Pads the caret line under the bytes s[0..to) of the echoed line s[0..len). */
static void pad_under(FILE *out, const unsigned char *s, int len, int to) {
  for (int i = 0; i < to;) {
    int cols;
    i += put_unit(NULL, s + i, (size_t)(len - i), &cols);
    if (cols < 0) fputc('\t', out);
    for (int k = 0; k < cols; k++) fputc(' ', out);
  }
}

static void print_source(FILE *out, Loc loc, int width) {
  if (!loc.file || loc.line <= 0) return;
  int len;
  const unsigned char *s = (const unsigned char *)line_start(loc.file, loc.line, &len);
  /* GCC's margin: the line number right-aligned in 5 columns, wider for a line past
   * 99999; the caret line's bar under the source line's bar. */
  int digits = snprintf(NULL, 0, "%d", loc.line), margin = digits > 5 ? digits : 5;
  fprintf(out, "%*d | ", margin, loc.line);
  int cols;
  for (int i = 0; i < len;) i += put_unit(out, s + i, (size_t)(len - i), &cols);
  fputc('\n', out);
  fprintf(out, "%*s | ", margin, "");
  int at = loc.col - 1 < 0 ? 0 : loc.col - 1 < len ? loc.col - 1 : len;
  int end = width < len - at ? at + width : len;
  /* The caret under the first column of the unit at `at`, tildes under the rest of the
   * span; past the end of the line, under where the next character would be. */
  pad_under(out, s, len, at);
  fputc('^', out);
  int span = 0;
  for (int i = at; i < end;) {
    int c;
    i += put_unit(NULL, s + i, (size_t)(len - i), &c);
    span += c < 0 ? 1 : c;
  }
  int tildes = (end > at ? span : width) - 1;
  for (int i = 0; i < tildes; i++) fputc('~', out);
  fputc('\n', out);
}

/* A diagnostic is one line (tools and tests read it by line) of valid UTF-8: control
 * characters and bytes that are not UTF-8 reaching it from user strings (a file name
 * with a newline, a stray byte the lexer names) are written escaped. */
static void put_escaped(FILE *out, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  for (size_t i = 0; i < n;) {
    unsigned cp = 0;
    int len = utf8_seq(s + i, n - i, &cp);
    if (len == 1 && cp == '\n') fputs("\\n", out);
    else if (len == 1 && cp == '\t') fputs("\\t", out);
    else if (len && !cp_control(cp)) fwrite(s + i, 1, (size_t)len, out);
    else
      for (int k = 0; k < (len ? len : 1); k++) fprintf(out, "\\x%02x", s[i + k]);
    i += len ? (size_t)len : 1;
  }
}

void diag_tool_error(const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&msg, fmt, ap);
  va_end(ap);
  fputs("tdslc: error: ", stderr);
  if (n >= 0) put_escaped(stderr, msg, (size_t)n); /* as a located diagnostic's message */
  fputs(n < 0 ? "out of memory\n" : "\n", stderr);
  free(msg);
}


static void vreport(Diag *d, Loc loc, int width, const char *kind, const char *fmt, va_list ap) {
  if (loc.file) {
    put_escaped(d->out, loc.file->path, strlen(loc.file->path));
    fprintf(d->out, ":%d:%d: %s: ", loc.line, loc.col, kind);
  } else {
    fprintf(d->out, "tdslc: %s: ", kind);
  }
  char small[512];
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= (int)sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big) vsnprintf(big, (size_t)n + 1, fmt, again);
    put_escaped(d->out, big ? big : small, big ? (size_t)n : sizeof small - 1);
    free(big);
  } else if (n > 0) {
    put_escaped(d->out, small, (size_t)n);
  }
  va_end(again);
  fputc('\n', d->out);
  print_source(d->out, loc, width);
}

static void verror(Diag *d, Loc loc, int width, const char *fmt, va_list ap) {
  d->errors++;
  if (!d->out) return;
  if (d->errors > d->max_errors) {
    if (!d->suppressed) {
      fprintf(d->out, "tdslc: too many errors (%d), stopping\n", d->max_errors);
      d->suppressed = true;
    }
    return;
  }
  vreport(d, loc, width, "error", fmt, ap);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(d, loc, 1, fmt, ap);
  va_end(ap);
}

void diag_error_span(Diag *d, Loc loc, int width, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(d, loc, width < 1 ? 1 : width, fmt, ap);
  va_end(ap);
}

void diag_note(Diag *d, Loc loc, const char *fmt, ...) {
  if (!d->out || d->errors > d->max_errors) return;
  va_list ap;
  va_start(ap, fmt);
  vreport(d, loc, 1, "note", fmt, ap);
  va_end(ap);
}

/* Edit distance (insertions, deletions, substitutions, transpositions of neighbours:
 * "stpe" is one from "step"), or cap + 1 when it exceeds cap. Names are short; a long
 * one (a host may pass 100 000 characters) is cut off by the length test first. */
int diag_edit_distance(Arena *a, const char *x, const char *y, int cap) {
  int n = (int)strlen(x), k = (int)strlen(y);
  if (abs(n - k) > cap || n > 256 || k > 256) return cap + 1;
  int *prev2 = ANEWN(a, int, k + 1), *prev = ANEWN(a, int, k + 1), *row = ANEWN(a, int, k + 1);
  for (int j = 0; j <= k; j++) prev[j] = j;
  for (int i = 1; i <= n; i++) {
    int best = row[0] = i;
    for (int j = 1; j <= k; j++) {
      int v = prev[j - 1] + (x[i - 1] != y[j - 1]);
      if (prev[j] + 1 < v) v = prev[j] + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1] && prev2[j - 2] + 1 < v) v = prev2[j - 2] + 1;
      row[j] = v;
      if (v < best) best = v;
    }
    if (best > cap) return cap + 1;
    int *t = prev2;
    prev2 = prev, prev = row, row = t;
  }
  return prev[k];
}

bool diag_near(Arena *a, const char *name, const char *candidate, int *best_d) {
  /* so `u` suggests no `x`, but `nn` suggests `n` */
  int cap = ((int)strlen(name) + (int)strlen(candidate) + 3) / 6;
  if (*best_d - 1 < cap) cap = *best_d - 1;
  int d = cap >= 0 ? diag_edit_distance(a, name, candidate, cap) : INT_MAX;
  if (d > cap) return false;
  *best_d = d;
  return true;
}
