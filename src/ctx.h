/* ctx.h: the compiler context: options, arena, diagnostics. The only mutable state
 * shared between passes; every pass takes it explicitly. */
#ifndef TDSL_CTX_H
#define TDSL_CTX_H

#include "base.h"
#include "ast.h"
#include "diag.h"
#include "graph.h"

#define TDSLC_VERSION "0.1.0"

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
  ACT_CHECK,   /* --check: the differential oracle (src/check.c) */
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
  bool tf32;              /* --tf32: fp32 contractions on TF32 tensor cores (cuda) */
  int opt_level;          /* -O0..-O3, default 2 */
  bool double_prec;       /* --precision=double */
  const char *emit_header;/* --emit-header=FILE.h */
  const char *name;       /* --name=NAME (NULL: from the input file name) */
  bool json;
  bool verbose;           /* --verbose: extra information in non-fixed output */
  bool check_bounds;      /* --check-bounds */
  bool phase_times;       /* -v: each phase with its time on stderr */
  bool time_report;       /* --time-report */
  bool no_cache;          /* --no-cache */
  int jobs;               /* -j N: compile workers (default: the online cores) */
  bool no_split;          /* --no-split: one gcc context (src/pcompile.h) */
  bool strict_fp;         /* --strict-fp: no reassociation of sums (src/schedule.h) */
  PtrVec include_dirs;    /* -I DIR (const char*) */
  int check_ulps;         /* --check-ulps=N; -1: the default (check.h) */
  /* --run (and --check) */
  unsigned long long seed;
  PtrVec sets;            /* RunSet* */
  PtrVec loads;           /* RunLoad* */
  PtrVec calls;           /* const char* */
  PtrVec prints;          /* const char* */
  const char *save;       /* --save PATH: checkpoint after the calls */
  const char *load_ckpt;  /* --load-checkpoint PATH: after init */
  /* make dependencies */
  bool md;                /* -MD */
  const char *mf;         /* -MF FILE */
} Options;

/* Per-phase times for -v and --time-report (src/timing.c). */
enum { TIMING_MAX = 16 };
typedef struct TimingPhase { const char *name; double wall, cpu; } TimingPhase;
typedef struct Timing {
  double wall0, cpu0, wall, cpu; /* at the start, at the last mark */
  TimingPhase phase[TIMING_MAX];
  int n;
} Timing;

typedef struct Ctx {
  Arena arena;
  Diag diag;
  Options opt;
  Timing timing;
  const char *exe_dir;    /* directory of the tdslc executable (stdlib lookup) */
  PtrVec deps;            /* every file the model depends on (const char*), for -MD */
  const Graph *graph;     /* the staged program: --run's messages say what a name is */
  const struct JitTarget *host; /* the CPU the gccjit backend builds for, read once */
} Ctx;

/* Directory holding prelude.tdsl and stdlib.tdsl: <exe_dir>/../lib in the build
 * tree, else <exe_dir>/../share/tdsl once installed. */
const char *ctx_stdlib_dir(Ctx *c);
/* Reads a file into an arena-allocated SrcFile (recorded in c->deps); NULL (errno set)
 * if unreadable or longer than TDSL_MAX_SOURCE bytes (errno EFBIG), so reading always
 * ends. */
enum { TDSL_MAX_SOURCE = 64 << 20 };
SrcFile *ctx_read_file(Ctx *c, const char *path);
/* The input file, or standard input when it is `-` (named <stdin> in diagnostics; the
 * default output and symbol prefix are then stdin.so and stdin_). */
SrcFile *ctx_read_input(Ctx *c);
/* Records a file the compiled model depends on (c->deps, once per path). */
void ctx_add_dep(Ctx *c, const char *path);
/* The base name of the input without its extension: the default output's stem. */
const char *ctx_model_base(Ctx *c);
/* The model's symbol prefix: --name, else the input file's base name as a C identifier. */
const char *ctx_model_name(Ctx *c);
/* -MD / -MF (src/depfile.c): the dependency file's path for target (-MF, else target's
 * with .d), and its contents, "TARGET: DEPS" and a phony rule per dependency (as gcc -MD
 * -MP), written to file (the driver's temporary, renamed over the path on success);
 * returns an exit status (2 when the file cannot be written). */
const char *depfile_path(Ctx *c, const char *target);
int write_depfile(Ctx *c, const char *target, const char *file);

/* src/timing.c: timing_mark ends the current phase (printed at once under -v). */
void timing_start(Ctx *c);
void timing_mark(Ctx *c, const char *phase);
void timing_report(Ctx *c);
/* A progress line on stderr (a terminal) every second after 2 s until unwatch. */
typedef struct TimingWatch TimingWatch;
TimingWatch *timing_watch(Ctx *c, const char *what);
void timing_unwatch(TimingWatch *w);

/* Pipeline stages. Each returns false after reporting errors through c->diag. */
Graph *stage_program(Ctx *c, const Program *p);       /* src/eval*.c */
bool infer_shapes(Ctx *c, Graph *g);                  /* src/infer*.c */
bool infer_projections(Ctx *c, Graph *g);
void dump_shapes(FILE *out, const Graph *g, bool json);
/* With verbose: parameters marked with their sizes, then their count (--verbose). */
void dump_shapes_ex(FILE *out, const Graph *g, bool json, bool verbose);
void dump_projections(FILE *out, const Graph *g, bool json);

#endif
