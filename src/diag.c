/* diag.c: prints located diagnostics with the offending source line and a caret. */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, FILE *out) {
  memset(d, 0, sizeof *d);
  d->out = out;
  d->max_errors = 20;
}

bool diag_full(const Diag *d) { return d->errors >= d->max_errors; }

/* Finds the start and length of line `line` (1-based) in f. */
static const char *line_start(const SrcFile *f, int line, int *len) {
  const char *p = f->text, *end = f->text + f->len;
  for (int l = 1; l < line && p < end; p++)
    if (*p == '\n') l++;
  const char *q = p;
  while (q < end && *q != '\n') q++;
  *len = (int)(q - p);
  return p;
}

static void print_source(FILE *out, Loc loc, int width) {
  if (!loc.file || loc.line <= 0) return;
  int len;
  const char *s = line_start(loc.file, loc.line, &len);
  fprintf(out, "%5d | %.*s\n", loc.line, len, s);
  fprintf(out, "      | ");
  /* Keep tabs so the caret lines up with the echoed line. */
  for (int i = 0; i < loc.col - 1 && i < len; i++) fputc(s[i] == '\t' ? '\t' : ' ', out);
  fputc('^', out);
  for (int i = 1; i < width; i++) fputc('~', out);
  fputc('\n', out);
}


/* A diagnostic is one line (tools and tests read it by line): control characters that
 * reach it from user strings (a file name with a newline, say) are written escaped. */
static void put_escaped(FILE *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') fputs("\\n", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", c);
    else fputc(c, out);
  }
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
  if (d->errors > d->max_errors) return;
  va_list ap;
  va_start(ap, fmt);
  vreport(d, loc, 1, "note", fmt, ap);
  va_end(ap);
}
