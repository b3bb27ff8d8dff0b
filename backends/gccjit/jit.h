/* jit.h: the libgccjit code generator for the loop IR, and the C renderings
 * (--emit-c, --emit-header). Sees only ir.h.
 *
 * A compiled model keeps no storage of its own: every tdsl_open allocates an instance
 * (ir_layout: a runtime header, one 64-byte aligned array per buffer, the index symbols)
 * and passes it to the model's functions. With NAME the model's symbol prefix
 * (--name), it exports, with C linkage:
 *   void NAME_fn_N(void *instance)      exported functions (routines, T.forward, ...)
 *   void NAME_call(void *instance, int k)   runs function k (the callees of the
 *                                       metadata's "seq" routines: IrFunc.seq)
 *   const char *NAME_model_meta(void)   the metadata text (ir_metadata) the runtime reads
 *   const char *tdsl_model_meta(void)   the same, in a shared library only (tdsl_open
 *                                       finds it without knowing NAME)
 * Initialization is runtime code driven by the metadata (runtime/tdslrt.c, tdsl_init). */
#ifndef TDSL_JIT_H
#define TDSL_JIT_H

#include <libgccjit.h>
#include <stdio.h>

#include "ir.h"

/* Under --check-bounds a failed check writes its message into the instance's fault
 * message, sets its fault word (tdsl_abi.h INST_FAULT) and returns from every function up
 * to the routine; runtime/tdslrt.c turns it into tdsl_call's -1 and message. */

typedef struct JitOpts {
  /* called as each phase ends ("code generation", "gcc"), when set */
  void (*mark)(void *arg, const char *phase);
  void *mark_arg;
  const char *name;  /* symbol prefix, a C identifier; NULL: "tdsl" */
  int opt_level;     /* 0..3 */
  bool check_bounds; /* trap out-of-range indices with a message */
  bool native;       /* -march/-mtune of the host */
  const struct JitTarget *target; /* with native: the host (jit_host_target), NULL: look it up */
  bool schedule;     /* run the schedule pass (src/schedule.h) first; false: the naive loops */
  bool strict_fp;    /* the schedule keeps the source order of sums */
} JitOpts;

/* Compiles to a shared library (object=false) or an object file. Returns false after
 * printing an error to stderr (jit_report_failure: exit status 2, not the input's fault). */
bool jit_compile_file(Arena *a, const IrModule *m, const JitOpts *o, const char *path, bool object);
/* Compiles in memory; the caller releases the result (and the context) when done. */
gcc_jit_result *jit_compile_mem(Arena *a, const IrModule *m, const JitOpts *o, gcc_jit_context **ctx_out);

/* The module as compiled: scheduled when o->schedule (for the target with_arch picks). */
const IrModule *jit_prepare(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch);

/* A split compile (backends/gccjit/jit_group.c): the module's functions in groups, each
 * compiled by a context of its own to an object file (in parallel, cached per group by
 * the driver), then linked. Groups are runs of functions in IR order whose boundaries
 * come from the functions' names and sizes, never from their position, so editing one
 * layer changes the groups around it only. A group addresses the storage it touches in
 * clusters of nearby buffers, each from a base offset it reads from a global, so storage
 * moving elsewhere leaves its code (and cache entry) unchanged. Group JIT_GROUP_META
 * holds the metadata and the base offsets, JIT_GROUP_CALL the dispatcher NAME_call.
 * Functions that only call, fill or run small pointwise nests go to groups of their own
 * compiled at -O1 at most (JitPlan.level); contractions and large nests at the
 * configured level. */
enum { JIT_GROUP_META, JIT_GROUP_CALL, JIT_GLUE_GROUPS };
typedef struct JitStore {
  int n;          /* clusters */
  long *base;     /* per cluster: its offset in the instance */
  int *buf, *sym; /* per buffer / symbol: its cluster; -1: not touched */
} JitStore;
typedef struct JitPlan {
  const IrModule *m; /* as compiled (jit_prepare) */
  bool with_arch;
  int ngroups;
  long total;        /* the size estimate of all functions (statements) */
  int *group;        /* per IR function: its group; -1 for a seq routine (no code) */
  long *size;        /* per group: a size estimate of its IR (statements) */
  int *level;        /* per group: gcc's -O */
  int *first;        /* per group: its first function (names its base offsets) */
  JitStore *store;   /* per group: the storage it touches (not the glue's) */
} JitPlan;
JitPlan *jit_plan(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch);
/* Everything group g's object file depends on besides the compiler and the options:
 * its functions' IR and the layout of the storage they touch. */
const char *jit_group_key(Arena *a, const JitPlan *p, const JitOpts *o, int g, bool object);
/* Compiles group g to the object file path; false after printing an error. */
bool jit_compile_group(Arena *a, const JitPlan *p, const JitOpts *o, int g, bool object, const char *path);
/* The symbols the linked output exports (NULL-terminated); the groups' other global
 * symbols are made local by the link. */
const char **jit_exports(Arena *a, const JitPlan *p, const JitOpts *o, bool object);
/* Links the groups' objects (objs[0..n)) into out: a shared library, or one object file
 * (object); dir holds the link's scratch files. False after printing an error. */
bool jit_link(Arena *a, const JitPlan *p, const JitOpts *o, const char *const *objs, int n, bool object, const char *dir,
              const char *out);

/* The instance struct type of a model in context c (its layout is ir_layout's). */
typedef struct JitInstance {
  gcc_jit_type *ptr;          /* pointer to the (64-byte aligned) struct */
  gcc_jit_field **buf, **sym; /* per buffer / symbol (a dynamic buffer: its pointer) */
  gcc_jit_field **dim;        /* per dynamic dimension: its current value (int) */
  gcc_jit_field *header;      /* void *[INST_RT_SLOTS], the runtime's */
  gcc_jit_field *fault, *fault_msg; /* int, char[INST_FAULT_MSG_LEN] (--check-bounds) */
} JitInstance;
JitInstance jit_instance_type(Arena *a, gcc_jit_context *c, const IrModule *m);
/* Part of the layout from byte base on: fields for the buffers and symbols marked in
 * bufs / syms at their offsets minus base (the rest is padding); the runtime's header
 * only when base is 0. */
JitInstance jit_instance_part(Arena *a, gcc_jit_context *c, const IrModule *m, const bool *bufs, const bool *syms, long base);
/* Exports NAME_model_meta (and tdsl_model_meta unless object) returning meta. */
void jit_export_meta(Arena *a, gcc_jit_context *c, const char *name, const char *meta, bool object);
/* Exports NAME_call(instance, k): a switch over the callees of m's seq functions
 * (fns: the context's functions, by IR index; each takes the instance). */
void jit_export_dispatch(Arena *a, gcc_jit_context *c, const IrModule *m, const char *name, const JitInstance *in,
                         gcc_jit_function **fns);
/* A fresh context that reports errors only through jit_report_failure and never lets
 * the gcc driver exit() tdslc. */
gcc_jit_context *jit_context_acquire(void);
/* Prints the context's first error as a tdslc internal error, with a hint; false. */
bool jit_report_failure(gcc_jit_context *c, const char *what);
/* The host CPU as the gcc driver's -march=native sees it: arch, the -march it names
 * (NULL if unknown); isa, the -m flags it expands to, space-separated (NULL if none);
 * vec_bytes, the widest vectors those flags allow (16 without them). */
typedef struct JitTarget {
  const char *arch;
  const char *isa;
  int vec_bytes;
} JitTarget;
JitTarget jit_host_target(Arena *a);
/* The host target, asked of gcc (a process, ~2 ms) only the first time: *slot holds it. */
const JitTarget *jit_host_target_once(Arena *a, const JitTarget **slot);
/* The symbol prefix of o->name (NULL: "tdsl"). */
const char *jit_name(const char *name);

/* backends/gccjit/emit_c.c */
void emit_c(FILE *out, const IrModule *m, bool check_bounds, bool strict_fp, const char *name);
/* name: the symbol prefix; extra: NULL-terminated names of further exported data
 * (NAME_X, char arrays: the cuda model's) the resolver answers too. */
void emit_header(FILE *out, const IrModule *m, const char *name, const char *const *extra);

#endif
