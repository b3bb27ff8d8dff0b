/* depfile.c: -MD / -MF, a make dependency file listing every file a model was built
 * from (the input, `open`ed files, the prelude and stdlib, `file` data), so that a
 * Makefile rebuilds the model when any of them changes (runtime/tdsl.mk). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
  put_path(o, target);
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
