/* cache.c: the on-disk cache of compiled models ($XDG_CACHE_HOME/tdslc, default
 * ~/.cache/tdslc; --no-cache bypasses it). An entry is named by a 128-bit hash of
 * everything the output depends on (the tdslc binary itself and libgccjit's version,
 * options, host target, the loop IR and the metadata) and holds the output's bytes followed by a trailer with their
 * length and hash, so a truncated or corrupted entry is detected and rebuilt, never
 * served. Entries are written to a temporary file and renamed into place, so
 * concurrent compiles (make -j) never see a partial one. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"

enum { TRAILER = 64 };

static uint64_t fnv(uint64_t h, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
  return h;
}

/* mkdir -p of dir; false if it cannot be made. */
static bool make_dirs(char *dir) {
  for (char *p = dir + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      bool ok = mkdir(dir, 0755) == 0 || errno == EEXIST;
      *p = '/';
      if (!ok) return false;
    }
  return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

/* The whole file, or NULL. Only a regular file: a FIFO planted as a cache entry would
 * block the compiler (a non-blocking open, then fstat, never waits for a writer). */
static char *slurp(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
    close(fd);
    return NULL;
  }
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  char *buf = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return buf;
}

const char *cache_self_id(Arena *a) {
  size_t n = 0;
  char *exe = slurp("/proc/self/exe", &n);
  if (!exe) return NULL;
  char *id = arena_printf(a, "%zu-%016llx", n, (unsigned long long)fnv(0xcbf29ce484222325ULL, exe, n));
  free(exe);
  return id;
}

const char *cache_entry(Arena *a, const char *key_text, const char *ext) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char *dir;
  if (xdg && *xdg == '/') dir = arena_printf(a, "%s/tdslc", xdg);
  else if (home && *home == '/') dir = arena_printf(a, "%s/.cache/tdslc", home);
  else return NULL;
  if (!make_dirs(dir)) return NULL;
  size_t n = strlen(key_text);
  return arena_printf(a, "%s/%016llx%016llx.%s", dir, (unsigned long long)fnv(0xcbf29ce484222325ULL, key_text, n),
                      (unsigned long long)fnv(0x84222325cbf29ce4ULL, key_text, n), ext);
}

static bool write_to(const char *path, const char *data, size_t n, const char *trailer) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, n, f) == n && (!trailer || fwrite(trailer, 1, TRAILER, f) == TRAILER);
  return (f && fclose(f) == 0) && ok;
}

/* Writes data to a temporary file beside path, then renames it over path; a path that
 * is not a regular file (-o /dev/stdout) is written in place. */
static bool write_atomic(const char *path, const char *data, size_t n, const char *trailer) {
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return write_to(path, data, n, trailer);
  size_t pl = strlen(path);
  char *tmp = malloc(pl + 32);
  if (!tmp) return false;
  snprintf(tmp, pl + 32, "%s.tmp%ld", path, (long)getpid());
  bool ok = write_to(tmp, data, n, trailer) && rename(tmp, path) == 0;
  if (!ok) unlink(tmp);
  free(tmp);
  return ok;
}

static void trailer_of(char *t, const char *data, size_t n) {
  memset(t, ' ', TRAILER);
  int k = snprintf(t, TRAILER, "\ntdslc-cache %zu %016llx", n, (unsigned long long)fnv(0xcbf29ce484222325ULL, data, n));
  t[k] = ' ';
  t[TRAILER - 1] = '\n';
}

CacheResult cache_fetch(const char *entry, const char *out) {
  size_t len;
  char *buf = slurp(entry, &len);
  if (!buf) return CACHE_MISS;
  char want[TRAILER];
  bool ok = len >= TRAILER;
  if (ok) {
    trailer_of(want, buf, len - TRAILER);
    ok = !memcmp(want, buf + len - TRAILER, TRAILER);
  }
  CacheResult r = CACHE_BAD;
  if (!ok) unlink(entry); /* stale, truncated or corrupted: rebuilt by the caller */
  else r = write_atomic(out, buf, len - TRAILER, NULL) ? CACHE_HIT : CACHE_MISS;
  free(buf);
  return r;
}

bool cache_store(const char *entry, const char *out) {
  struct stat st;
  if (stat(out, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) return false; /* -o /dev/stdout */
  if (stat(entry, &st) == 0 && !S_ISREG(st.st_mode)) return false; /* a FIFO would block */
  size_t len;
  char *buf = slurp(out, &len), t[TRAILER];
  if (!buf) return false;
  trailer_of(t, buf, len);
  bool ok = write_atomic(entry, buf, len, t);
  free(buf);
  return ok;
}
