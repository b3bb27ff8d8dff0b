/* outfile.c: atomic output files (see outfile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

bool out_begin(Arena *a, OutFile *o, const char *path) {
  o->path = path;
  o->tmp = arena_printf(a, "%s.tmpXXXXXX", path);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "tdslc: error: cannot write '%s': Is a directory\n", path);
    o->tmp = NULL;
    return false;
  }
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", path, strerror(errno));
    o->tmp = NULL;
    return false;
  }
  /* mkstemp makes it 0600; a library or header gets the usual umask-derived mode. */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  close(fd);
  return true;
}

FILE *out_fopen(OutFile *o) {
  FILE *f = o->tmp ? fopen(o->tmp, "w") : NULL;
  if (!f) fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", o->path, strerror(errno));
  return f;
}

bool out_commit(OutFile *o) {
  if (!o->tmp) return false;
  if (rename(o->tmp, o->path) != 0) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", o->path, strerror(errno));
    out_discard(o);
    return false;
  }
  o->tmp = NULL;
  return true;
}

void out_discard(OutFile *o) {
  if (o->tmp) unlink(o->tmp);
  o->tmp = NULL;
}

bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
