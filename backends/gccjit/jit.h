/* jit.h: the libgccjit code generator for the loop IR, and the C renderings
 * (--emit-c, --emit-header). Sees only ir.h.
 *
 * A compiled model exports, with C linkage:
 *   TYPE tdsl_buf_N[SIZE]      one array per buffer (64-byte aligned, distinct objects,
 *                              so gcc knows they never alias)
 *   int tdsl_sym_N             the current value of index symbol N
 *   void tdsl_fn_N(void)       exported functions (routines, T.forward, T.backprop)
 *   const char *tdsl_model_meta(void)   the metadata text (ir_metadata) the runtime reads
 * Initialization is runtime code driven by the metadata (runtime/tdslrt.c, tdsl_init). */
#ifndef TDSL_JIT_H
#define TDSL_JIT_H

#include <libgccjit.h>
#include <stdio.h>

#include "ir.h"

typedef struct JitOpts {
  int opt_level;     /* 0..3 */
  bool check_bounds; /* trap out-of-range indices with a message */
  bool native;       /* -march/-mtune of the host */
  bool schedule;     /* run the schedule pass (src/schedule.h) first; false: the naive loops */
  bool strict_fp;    /* the schedule keeps the source order of sums */
} JitOpts;

/* Compiles to a shared library (object=false) or an object file. Returns false after
 * printing an error to stderr. */
bool jit_compile_file(Arena *a, const IrModule *m, const JitOpts *o, const char *path, bool object);
/* Compiles in memory; the caller releases the result (and the context) when done. */
gcc_jit_result *jit_compile_mem(Arena *a, const IrModule *m, const JitOpts *o, gcc_jit_context **ctx_out);

/* backends/gccjit/emit_c.c */
void emit_c(FILE *out, const IrModule *m, bool check_bounds);
void emit_header(FILE *out, const IrModule *m, const char *model);

#endif
