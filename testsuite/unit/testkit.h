/* testkit.h: the unit tests' checks, one family for every test_*.c.
 *   CHECK(cond);  CHECK(cond, "got %d", x);   counts a check; a false cond is a failure,
 *                                            reported as FILE:LINE: check failed: COND: MESSAGE
 *   tk_fail("...", ...);                      a failure found some other way
 *   return tk_exit("test_name");              prints "test_name: N checks, M failed",
 *                                            exits 0 only without failures */
#ifndef TESTKIT_H
#define TESTKIT_H

#include <stdarg.h>
#include <stdio.h>

static int checks __attribute__((unused)), failures __attribute__((unused));

static inline void tk_vnote(const char *fmt, va_list ap) {
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

static inline void tk_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tk_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tk_vnote(fmt, ap);
  va_end(ap);
}

static inline void tk_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tk_fail(const char *fmt, ...) {
  failures++;
  va_list ap;
  va_start(ap, fmt);
  tk_vnote(fmt, ap);
  va_end(ap);
}

/* The message, when given, must be a string literal: ": " is pasted before it. */
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    checks++;                                                          \
    if (!(cond)) {                                                        \
      failures++;                                                      \
      fprintf(stderr, "%s:%d: check failed: %s", __FILE__, __LINE__, #cond); \
      tk_note(": " __VA_ARGS__);                                          \
    }                                                                     \
  } while (0)

static inline int tk_exit(const char *name) {
  printf("%s: %d checks, %d failed\n", name, checks, failures);
  return failures != 0;
}

#endif
