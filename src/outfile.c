/* outfile.c: atomic output files (see outfile.h). */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "outfile.h"

/* Through a symbolic link (even one whose file does not exist yet) the file it names is
 * replaced, as gcc's output would be, and the link stays. */
static const char *link_target(Arena *a, const char *path) {
  char *real = realpath(path, NULL);
  const char *t = real ? arena_strdup(a, real) : path;
  free(real);
  struct stat st;
  char buf[4096];
  ssize_t n;
  if (real || lstat(path, &st) || !S_ISLNK(st.st_mode) || (n = readlink(path, buf, sizeof buf - 1)) <= 0) return t;
  buf[n] = 0;
  const char *slash = strrchr(path, '/');
  if (buf[0] == '/' || !slash) return arena_strdup(a, buf);
  return arena_printf(a, "%.*s/%s", (int)(slash - path), path, buf);
}

static bool out_begin_in(Arena *a, OutFile *o, const char *path);

/* The temporary of an output that is copied at commit: under $TMPDIR (else /tmp). */
static bool direct_tmp(Arena *a, OutFile *o) {
  const char *t = getenv("TMPDIR");
  o->tmp = arena_printf(a, "%s/tdslc-out-XXXXXX", t && *t ? t : "/tmp");
  int fd = mkstemp(o->tmp);
  if (fd < 0 && t && *t) { /* a TMPDIR that is gone or read-only: /tmp still serves */
    o->tmp = arena_strdup(a, "/tmp/tdslc-out-XXXXXX");
    fd = mkstemp(o->tmp);
  }
  if (fd < 0) {
    diag_tool_error("cannot write %s: no temporary file in '%s': %s", out_name(a, o), t && *t ? t : "/tmp",
                    strerror(errno));
    o->tmp = NULL;
    out_discard(o);
    return false;
  }
  close(fd);
  o->direct = true;
  return true;
}

const char *out_name(Arena *a, const OutFile *o) {
  return o->to_stdout ? "the standard output" : arena_printf(a, "'%s'", o->path);
}

/* The temporaries that exist now, for out_unlink_all (a handler that ends the process
 * cannot reach the OutFiles; tdslc makes at most three outputs at once: the output, the
 * header and the dependency file, plus the checkpoint of --save -). */
enum { LIVE_MAX = 8 };
static const char *volatile live_tmp[LIVE_MAX];

static void live_add(const char *tmp) {
  for (int i = 0; i < LIVE_MAX; i++)
    if (!live_tmp[i]) {
      live_tmp[i] = tmp;
      return;
    }
}

static void live_drop(const char *tmp) {
  for (int i = 0; tmp && i < LIVE_MAX; i++)
    if (live_tmp[i] == tmp) live_tmp[i] = NULL;
}

void out_unlink_all(void) {
  for (int i = 0; i < LIVE_MAX; i++)
    if (live_tmp[i]) unlink(live_tmp[i]);
}

/* Entries unlinked while a directory is read may make getdents skip others: the
 * directory is read again from the start until a pass finds nothing to remove. */
static bool remove_tree_at(int parent, const char *name, int depth) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  for (bool again = fd >= 0; again;) {
    again = false;
    char buf[2048];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = getdents64(fd, buf, sizeof buf)) > 0)
      for (ssize_t off = 0; off < n;) {
        struct dirent64 *e = (struct dirent64 *)(buf + off);
        off += e->d_reclen;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (unlinkat(fd, e->d_name, 0) == 0) again = true;
        else if (errno == EISDIR && depth < 16 && remove_tree_at(fd, e->d_name, depth + 1)) again = true;
      }
  }
  if (fd >= 0) close(fd);
  return unlinkat(parent, name, AT_REMOVEDIR) == 0;
}

void remove_tree(const char *path) { remove_tree_at(AT_FDCWD, path, 0); }

bool out_begin(Arena *a, OutFile *o, const char *path) {
  bool ok = out_begin_in(a, o, path);
  if (ok) live_add(o->tmp);
  return ok;
}

static bool out_begin_in(Arena *a, OutFile *o, const char *path) {
  o->path = o->target = path;
  o->direct = o->holds = false;
  o->to_stdout = !strcmp(path, "-");
  o->fd = -1;
  o->tmp = NULL;
  /* "-" is the standard output, as in gcc (-o -, -MF -): the output is made in a
   * temporary as a device's is and copied there at commit, after whatever stdio holds. */
  if (o->to_stdout) return direct_tmp(a, o);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    diag_tool_error("cannot write '%s': Is a directory", path);
    return false;
  }
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    /* A device, FIFO or socket (-o /dev/null) is written as it is, as gcc does: renaming
     * over it would replace /dev/null for everyone. The output is still made in a
     * temporary (under $TMPDIR) and copied at out_commit, so a failed compilation
     * writes nothing there and a write error (/dev/full) is reported as one, not as a
     * failure of libgccjit's driver. */
    if (S_ISFIFO(st.st_mode)) {
      /* Without a reader, opening it for writing blocks until one comes (for ever, in a
       * build): a non-blocking open fails with ENXIO instead. */
      int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        diag_tool_error("cannot write '%s': %s", path, errno == ENXIO ? "a FIFO that no process reads" : strerror(errno));
        return false;
      }
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      o->fd = fd;
      o->holds = true;
    }
    return direct_tmp(a, o);
  }
  o->target = link_target(a, path);
  /* the temporary is the target's name with a suffix, the last component cut short
   * where the suffix would take it past NAME_MAX (a target name near the limit failed
   * with "File name too long") */
  const char *slash = strrchr(o->target, '/');
  size_t dir = slash ? (size_t)(slash - o->target) + 1 : 0, base = strlen(o->target) - dir;
  int keep = (int)(dir + (base > NAME_MAX - 16 ? NAME_MAX - 16 : base));
  o->tmp = arena_printf(a, "%.*s.tmpXXXXXX", keep, o->target);
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    diag_tool_error("cannot write '%s': %s", path, strerror(errno));
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
  if (!f) diag_tool_error("cannot write %s: %s", o->to_stdout ? "the standard output" : o->path, strerror(errno));
  return f;
}

static void out_release(OutFile *o) {
  if (o->holds) close(o->fd);
  o->holds = false;
}

/* Copies the finished temporary into the device, FIFO or socket o->path, or into the
 * standard output (after what stdio buffered for it, which comes first). */
static bool copy_out(OutFile *o) {
  if (o->to_stdout && fflush(stdout)) {
    diag_tool_error("cannot write the standard output: %s", strerror(errno));
    return false;
  }
  int in = open(o->tmp, O_RDONLY | O_CLOEXEC);
  int out = o->to_stdout ? STDOUT_FILENO : o->holds ? o->fd : open(o->path, O_WRONLY | O_CLOEXEC);
  bool ok = in >= 0 && out >= 0;
  char buf[65536];
  ssize_t n = 0;
  while (ok && (n = read(in, buf, sizeof buf)) > 0) {
    for (ssize_t done = 0; ok && done < n;) {
      ssize_t w = write(out, buf + done, (size_t)(n - done));
      if (w > 0) done += w;
      else if (w < 0 && errno != EINTR) ok = false;
    }
  }
  ok = ok && n == 0;
  int err = ok ? 0 : errno;
  if (in >= 0) close(in);
  if (out >= 0 && !o->holds && !o->to_stdout && close(out) && ok) {
    ok = false;
    err = errno;
  }
  if (!ok && o->to_stdout) diag_tool_error("cannot write the standard output: %s", strerror(err ? err : EIO));
  else if (!ok) diag_tool_error("cannot write '%s': %s", o->path, strerror(err ? err : EIO));
  return ok;
}

bool out_commit(OutFile *o) {
  if (!o->tmp) return false;
  if (o->direct) {
    bool ok = copy_out(o);
    out_discard(o);
    return ok;
  }
  if (rename(o->tmp, o->target) != 0) {
    diag_tool_error("cannot write '%s': %s", o->path, strerror(errno));
    out_discard(o);
    return false;
  }
  live_drop(o->tmp);
  o->tmp = NULL;
  return true;
}

void out_discard(OutFile *o) {
  out_release(o);
  if (o->tmp) unlink(o->tmp);
  live_drop(o->tmp);
  o->tmp = NULL;
}

bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  /* "-" is the standard input or output, not a file of that name */
  return a && b && strcmp(a, "-") && strcmp(b, "-") && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
