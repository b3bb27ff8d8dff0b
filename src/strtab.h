/* strtab.h: a string-keyed hash table (open addressing, arena storage) for lookups
 * that would otherwise scan a list: staging's top-level names and tensor names, whose
 * number grows with the program. Keys are not copied: they must outlive the table. */
#ifndef TDSL_STRTAB_H
#define TDSL_STRTAB_H

#include "base.h"

typedef struct StrTab {
  const char **keys;
  void **vals;
  int cap, len; /* cap: a power of two (0 before the first put) */
} StrTab;

void *strtab_get(const StrTab *t, const char *key); /* NULL if absent */
void strtab_put(Arena *a, StrTab *t, const char *key, void *val); /* insert or replace */

#endif
