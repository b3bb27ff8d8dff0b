/* strtab.c: see strtab.h. */
#include <string.h>

#include "strtab.h"

static unsigned long hash(const char *s) {
  unsigned long h = 1469598103934665603UL; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211UL;
  return h;
}

/* The slot of key, or the empty slot where it belongs. */
static int slot(const StrTab *t, const char *key) {
  int i = (int)(hash(key) & (unsigned long)(t->cap - 1));
  while (t->keys[i] && strcmp(t->keys[i], key)) i = (i + 1) & (t->cap - 1);
  return i;
}

void *strtab_get(const StrTab *t, const char *key) {
  if (!t->cap) return NULL;
  int i = slot(t, key);
  return t->keys[i] ? t->vals[i] : NULL;
}

/* Doubles the table (old storage is left to the arena). */
static void grow(Arena *a, StrTab *t) {
  StrTab n = {.cap = t->cap ? 2 * t->cap : 64};
  n.keys = ANEWN(a, const char *, n.cap);
  n.vals = ANEWN(a, void *, n.cap);
  for (int i = 0; i < t->cap; i++)
    if (t->keys[i]) {
      int j = slot(&n, t->keys[i]);
      n.keys[j] = t->keys[i];
      n.vals[j] = t->vals[i];
      n.len++;
    }
  *t = n;
}

void strtab_put(Arena *a, StrTab *t, const char *key, void *val) {
  if (2 * (t->len + 1) > t->cap) grow(a, t);
  int i = slot(t, key);
  if (!t->keys[i]) {
    t->keys[i] = key;
    t->len++;
  }
  t->vals[i] = val;
}
