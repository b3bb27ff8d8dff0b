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

/* a * b for non-negative work estimates (points of a loop nest, blocks of a grid),
 * clamped to SAT_MAX: an iteration space may exceed 2^63 (three reduced axes of 2^31
 * each), and such a product only decides whether there is "enough" work. SAT_MAX
 * leaves room to round a clamped value up to a tile. */
#define SAT_MAX ((int64_t)1 << 62)
static inline int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) || r > SAT_MAX ? SAT_MAX : r;
}

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

/* Whether the byte at p (before end) is the last one of a line break. LF, CRLF and a
 * lone CR (old Mac files) each end a line, as in C compilers and Python: the lexer's
 * positions, the echoed source line and a spec's error position all count lines with
 * this, so that they agree. */
static inline bool src_eol(const char *p, const char *end) {
  return *p == '\n' || (*p == '\r' && (p + 1 >= end || p[1] != '\n'));
}

#endif
