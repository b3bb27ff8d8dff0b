/* check.h: tdslc --check, the differential oracle (src/check.c). */
#ifndef TDSL_CHECK_H
#define TDSL_CHECK_H

#include "ctx.h"
#include "ir.h"
#include "tdsl.h"

/* --check-ulps default: reassociated float32 sums of a few thousand terms stay within it. */
enum { CHECK_DEFAULT_ULPS = 256 };

/* Compiles m twice (the reference: plain loop IR, -O0, no scheduling, generic target;
 * the candidate: as configured), runs every exported routine on both from the same
 * init, and compares every tensor. Returns the exit status (0 agree, 1 differ/error). */
int check_model(Ctx *c, IrModule *m);
/* The comparison itself, on two open models of the same IR module: label names the
 * candidate in messages; ulps 0 compares bitwise. Prints a summary line on success. */
int check_models(Ctx *c, const IrModule *ir, tdsl_model *ref, tdsl_model *opt, int ulps, const char *label);

#endif
