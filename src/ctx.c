/* ctx.c: context helpers shared by the driver and the passes (kept out of main.c so
 * that unit tests, which link every object but main.o, can stage programs). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"

const char *ctx_stdlib_dir(Ctx *c) {
  /* build/tdslc, build/asan/tdslc (sanitized build), PREFIX/bin/tdslc */
  const char *cands[] = {"../lib", "../../lib", "../share/tdsl"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
    const char *dir = arena_printf(&c->arena, "%s/%s", c->exe_dir, cands[i]);
    const char *probe = arena_printf(&c->arena, "%s/prelude.tdsl", dir);
    if (access(probe, R_OK) == 0) {
      char *real = realpath(dir, NULL); /* diagnostics show /x/lib, not /x/build/../lib */
      if (real) {
        dir = arena_strdup(&c->arena, real);
        free(real);
      }
      return dir;
    }
  }
  return NULL;
}

/* The text of f (at most TDSL_MAX_SOURCE bytes) as an SrcFile named name; NULL, errno
 * set, on a read error or a longer text. */
static SrcFile *read_stream(Ctx *c, FILE *f, const char *name) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len > TDSL_MAX_SOURCE) { /* /dev/zero, a pipe that never ends */
      free(buf);
      errno = EFBIG;
      return NULL;
    }
    if (cap - len - 1 == 0) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) { free(buf); buf = NULL; break; }
      buf = nb;
      cap *= 2;
    }
  }
  if (ferror(f) || !buf) {
    free(buf);
    if (!errno) errno = EIO;
    return NULL;
  }
  SrcFile *sf = ANEW(&c->arena, SrcFile);
  sf->path = arena_strdup(&c->arena, name);
  sf->text = arena_strndup(&c->arena, buf, len);
  sf->len = len;
  free(buf);
  return sf;
}

SrcFile *ctx_read_file(Ctx *c, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  SrcFile *sf = read_stream(c, f, path);
  int saved = errno;
  fclose(f);
  errno = saved;
  if (sf) ctx_add_dep(c, path);
  return sf;
}

SrcFile *ctx_read_input(Ctx *c) {
  if (strcmp(c->opt.input, "-")) return ctx_read_file(c, c->opt.input);
  errno = 0;
  return read_stream(c, stdin, "<stdin>");
}

void ctx_add_dep(Ctx *c, const char *path) {
  for (int i = 0; i < c->deps.len; i++)
    if (!strcmp(c->deps.items[i], path)) return;
  vec_push(&c->arena, &c->deps, arena_strdup(&c->arena, path));
}

const char *ctx_model_name(Ctx *c) {
  if (c->opt.name) return c->opt.name;
  const char *b = ctx_model_base(c);
  char *n = arena_printf(&c->arena, "%s%s", *b >= '0' && *b <= '9' ? "_" : "", b);
  for (char *p = n; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) *p = '_';
  return *n ? n : "model";
}

const char *ctx_model_base(Ctx *c) {
  if (!strcmp(c->opt.input, "-")) return "stdin";
  const char *in = c->opt.input, *slash = strrchr(in, '/');
  const char *b = slash ? slash + 1 : in;
  const char *dot = strrchr(b, '.');
  return dot && dot != b ? arena_strndup(&c->arena, b, (size_t)(dot - b)) : b;
}
