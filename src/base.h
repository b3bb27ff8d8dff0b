/* base.h: arena allocation, growable vectors, source locations.
 * Every compiler data structure is arena-allocated; an arena is freed as a whole. */
#ifndef TDSL_BASE_H
#define TDSL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
} Arena;

void *arena_alloc(Arena *a, size_t size);          /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(Arena *a);

#define ANEW(arena, T) ((T *)arena_alloc((arena), sizeof(T)))
#define ANEWN(arena, T, n) ((T *)arena_alloc((arena), sizeof(T) * (size_t)(n)))

/* A growable array of pointers backed by an arena (old storage is abandoned
 * to the arena on growth: amortized cost stays linear). */
typedef struct PtrVec {
  void **items;
  int len, cap;
} PtrVec;
void vec_push(Arena *a, PtrVec *v, void *item);
#define VEC_AT(v, T, i) ((T *)(v).items[(i)])

/* A location in a source file: 1-based line and column (columns count bytes). */
typedef struct SrcFile SrcFile;
typedef struct Loc {
  const SrcFile *file;
  int line, col;
} Loc;

struct SrcFile {
  const char *path;     /* as given on the command line or found by `open` */
  const char *text;     /* NUL-terminated contents */
  size_t len;
};

#endif
