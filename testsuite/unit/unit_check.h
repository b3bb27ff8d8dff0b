/* unit_check.h: the counting CHECK of the unit tests that print "N checks, M failed". */
#ifndef TDSL_UNIT_UNIT_CHECK_H
#define TDSL_UNIT_UNIT_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond, ...)                                       \
  do {                                                         \
    checks++;                                                  \
    if (!(cond)) {                                             \
      failures++;                                              \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
      printf(__VA_ARGS__);                                     \
      printf("\n");                                            \
    }                                                          \
  } while (0)

#endif
