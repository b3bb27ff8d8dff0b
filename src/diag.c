/* diag.c: prints located diagnostics with the offending source line and a caret. */
#include "diag.h"

#include <stdarg.h>
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


static void vreport(Diag *d, Loc loc, int width, const char *kind, const char *fmt, va_list ap) {
  if (loc.file)
    fprintf(d->out, "%s:%d:%d: %s: ", loc.file->path, loc.line, loc.col, kind);
  else
    fprintf(d->out, "tdslc: %s: ", kind);
  vfprintf(d->out, fmt, ap);
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
