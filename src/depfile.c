/* depfile.c: -MD / -MF, a make dependency file listing every file a model was built
 * from (the input, `open`ed files, the prelude and stdlib, `file` data), so that a
 * Makefile rebuilds the model when any of them changes (runtime/tdsl.mk). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ctx.h"

/* Make syntax: a space or '#' is backslash-escaped, '$' doubled. */
static void put_path(FILE *o, const char *p) {
  for (; *p; p++) {
    if (*p == ' ' || *p == '#') fputc('\\', o);
    if (*p == '$') fputc('$', o);
    fputc(*p, o);
  }
}

const char *depfile_path(Ctx *c, const char *target) {
  if (c->opt.mf) return c->opt.mf;
  const char *slash = strrchr(target, '/'), *dot = strrchr(target, '.');
  if (dot && (!slash || dot > slash + 1)) return arena_printf(&c->arena, "%.*s.d", (int)(dot - target), target);
  return arena_printf(&c->arena, "%s.d", target);
}

int write_depfile(Ctx *c, const char *target, const char *file) {
  const char *path = depfile_path(c, target);
  FILE *o = fopen(file, "w");
  if (!o) {
    diag_tool_error("cannot write '%s': %s", path, strerror(errno));
    return 2;
  }
  /* Targets: the output and the --emit-header header (tdsl.mk's %.h rule compiles into
   * /dev/null for the header alone: a device is no target, as make would try to make
   * it). */
  struct stat st;
  const char *targets[2] = {target, c->opt.emit_header};
  int named = 0;
  for (int i = 0; i < 2; i++) {
    if (!targets[i] || !strcmp(targets[i], "-") || (!stat(targets[i], &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
      continue; /* "-", the standard output, is no file either */
    if (named++) fputc(' ', o);
    put_path(o, targets[i]);
  }
  if (!named) put_path(o, target); /* some target, or make refuses the file */
  fputc(':', o);
  for (int i = 0; i < c->deps.len; i++) {
    fputs(" \\\n ", o);
    put_path(o, c->deps.items[i]);
  }
  fputc('\n', o);
  for (int i = 0; i < c->deps.len; i++) {
    if (!strcmp(c->deps.items[i], c->opt.input)) continue; /* as gcc -MP: not the input */
    fputc('\n', o);
    put_path(o, c->deps.items[i]);
    fputs(":\n", o);
  }
  if (fclose(o)) {
    diag_tool_error("cannot write '%s': %s", path, strerror(errno));
    return 2;
  }
  return 0;
}
