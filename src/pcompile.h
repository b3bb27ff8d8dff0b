/* pcompile.h: a model compiled as groups of functions (backends/gccjit/jit.h, JitPlan)
 * by parallel worker processes, each group cached on its own (src/pcompile.c). */
#ifndef TDSL_PCOMPILE_H
#define TDSL_PCOMPILE_H

#include "ctx.h"
#include "jit.h"

/* A module smaller than PCOMPILE_MIN_SIZE statements (moons: 289, a 10-layer MLP:
 * 837) or with fewer groups than PCOMPILE_MIN_GROUPS compiles faster in one context:
 * each group costs a process, a gcc start-up and an assembler run, the link ~40 ms. */
enum { PCOMPILE_MIN_SIZE = 600, PCOMPILE_MIN_GROUPS = 4, PCOMPILE_SERIAL = -1 };

/* Compiles m to out (a shared library, or an object file) on up to jobs workers.
 * key_head: what every cache key starts with (the compiler and options); NULL: no
 * cache. Returns PCOMPILE_SERIAL when the module is too small to split (nothing
 * done), else an exit status: 0, or 2 after a reported failure (libgccjit, a worker,
 * the link, scratch files: never the input's fault). */
int pcompile(Ctx *c, const IrModule *m, const JitOpts *jo, bool object, const char *key_head, int jobs, const char *out);

#endif
