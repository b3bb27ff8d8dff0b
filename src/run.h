/* run.h: --run (src/run.c): runs a model compiled in memory and prints the tensors
 * --print names (CLI.md); the driver compiles it with the chosen backend. */
#ifndef TDSL_RUN_H
#define TDSL_RUN_H

#include <libgccjit.h>

#include "ctx.h"

/* Opens r through the runtime, inits, applies --set/--load, calls --call routines (or
 * each printed tensor's forward), prints; returns a process exit status (0 or 1). */
int run_jit_result(Ctx *c, gcc_jit_result *r);

#endif
