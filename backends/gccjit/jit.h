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
  const char *arch;  /* with native: the host's -march (jit_host_arch), NULL: look it up */
  bool schedule;     /* run the schedule pass (src/schedule.h) first; false: the naive loops */
  bool strict_fp;    /* the schedule keeps the source order of sums */
} JitOpts;

/* Compiles to a shared library (object=false) or an object file. Returns false after
 * printing an error to stderr (jit_report_failure: exit status 2, not the input's fault). */
bool jit_compile_file(Arena *a, const IrModule *m, const JitOpts *o, const char *path, bool object);
/* Compiles in memory; the caller releases the result (and the context) when done. */
gcc_jit_result *jit_compile_mem(Arena *a, const IrModule *m, const JitOpts *o, gcc_jit_context **ctx_out);

/* The instance struct type of a model in context c (its layout is ir_layout's). */
typedef struct JitInstance {
  gcc_jit_type *ptr;          /* pointer to the (64-byte aligned) struct */
  gcc_jit_field **buf, **sym; /* per buffer / symbol (a dynamic buffer: its pointer) */
  gcc_jit_field **dim;        /* per dynamic dimension: its current value (int) */
  gcc_jit_field *header;      /* void *[INST_RT_SLOTS], the runtime's */
  gcc_jit_field *fault, *fault_msg; /* int, char[INST_FAULT_MSG_LEN] (--check-bounds) */
} JitInstance;
JitInstance jit_instance_type(Arena *a, gcc_jit_context *c, const IrModule *m);
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
/* The host CPU as gcc's -march names it (NULL if unknown). */
const char *jit_host_arch(Arena *a);
/* The symbol prefix of o->name (NULL: "tdsl"). */
const char *jit_name(const char *name);

/* backends/gccjit/emit_c.c */
void emit_c(FILE *out, const IrModule *m, bool check_bounds, const char *name);
/* name: the symbol prefix; extra: NULL-terminated names of further exported data
 * (NAME_X, char arrays: the cuda model's) the resolver answers too. */
void emit_header(FILE *out, const IrModule *m, const char *name, const char *const *extra);

#endif
