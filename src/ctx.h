/* ctx.h: the compiler context: options, arena, diagnostics. The only mutable state
 * shared between passes; every pass takes it explicitly. */
#ifndef TDSL_CTX_H
#define TDSL_CTX_H

#include "base.h"
#include "ast.h"
#include "diag.h"
#include "graph.h"

typedef enum Action {
  ACT_COMPILE, /* -o OUT (.so, or .o with -c) */
  ACT_DUMP_AST,
  ACT_DUMP_GRAPH,
  ACT_DUMP_SHAPES,
  ACT_DUMP_PROJECTIONS,
  ACT_DUMP_IR,
  ACT_EMIT_C,
  ACT_EMIT_CUDA,
  ACT_EMIT_PTX,
  ACT_RUN,
} Action;

typedef enum Backend { BACKEND_CC, BACKEND_CUDA } Backend;

typedef struct RunSet { const char *name; long long value; } RunSet;      /* --set SYM=INT */
typedef struct RunLoad { const char *tensor; const char *path; } RunLoad; /* --load T=PATH */

typedef struct Options {
  Action action;
  const char *input;      /* FILE.tdsl */
  const char *output;     /* -o */
  bool object;            /* -c */
  Backend backend;
  const char *arch;       /* --arch=sm_NN */
  int opt_level;          /* -O0..-O3, default 2 */
  bool double_prec;       /* --precision=double */
  const char *emit_header;/* --emit-header=FILE.h */
  const char *name;       /* --name=NAME (NULL: from the input file name) */
  bool json;
  bool check_bounds;      /* --check-bounds */
  PtrVec include_dirs;    /* -I DIR (const char*) */
  /* --run */
  unsigned long long seed;
  PtrVec sets;            /* RunSet* */
  PtrVec loads;           /* RunLoad* */
  PtrVec calls;           /* const char* */
  PtrVec prints;          /* const char* */
} Options;

typedef struct Ctx {
  Arena arena;
  Diag diag;
  Options opt;
  const char *exe_dir;    /* directory of the tdslc executable (stdlib lookup) */
} Ctx;

/* Directory holding prelude.tdsl and stdlib.tdsl: <exe_dir>/../runtime in the build
 * tree, else <exe_dir>/../share/tdsl once installed. */
const char *ctx_stdlib_dir(Ctx *c);
/* Reads a file into an arena-allocated SrcFile; NULL if unreadable. */
SrcFile *ctx_read_file(Ctx *c, const char *path);

/* Pipeline stages. Each returns false after reporting errors through c->diag. */
Graph *stage_program(Ctx *c, const Program *p);       /* src/eval*.c */
bool infer_shapes(Ctx *c, Graph *g);                  /* src/infer*.c */
bool infer_projections(Ctx *c, Graph *g);
void dump_shapes(FILE *out, const Graph *g, bool json);
void dump_projections(FILE *out, const Graph *g, bool json);
/* Lowering and backends: returns a process exit status (0, 1, or 2). */
int backend_main(Ctx *c, Graph *g);                   /* src/lower.c + backends/ */
/* The model's symbol prefix: --name, else the input file's base name as a C identifier
 * (src/backend.c). */
const char *model_name(Ctx *c);

#endif
