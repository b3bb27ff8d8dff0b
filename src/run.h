/* run.h: --run (src/run.c): runs a model compiled in memory and prints the tensors
 * --print names (tdslc(1), "Printed tensors"); the driver compiles it with the chosen backend. */
#ifndef TDSL_RUN_H
#define TDSL_RUN_H

#include <libgccjit.h>

#include "ctx.h"

/* Opens r through the runtime, inits, applies --set/--load, calls --call routines (or
 * each printed tensor's forward), prints; returns a process exit status (0 or 1). */
int run_jit_result(Ctx *c, gcc_jit_result *r);
/* The same for a compiled shared library. */
int run_jit_file(Ctx *c, const char *path);
/* Symbols of an in-memory gccjit result, for tdsl_open_resolved. */
void *run_jit_resolve(void *handle, const char *symbol);
/* tdsl_init with --seed, then every --set and --load; after printing an error, 2 when a
 * --load file cannot be opened, else 1. */
struct tdsl_model;
int run_prepare(Ctx *c, struct tdsl_model *m);

#endif
