/* tdsl_abi.h: the numberings the compiler and libtdslrt share (not installed: a host
 * program sees only tdsl.h). Axis kinds take their values from tdsl.h's public
 * TDSL_BATCH, TDSL_OUTPUT, TDSL_INPUT; init kinds are what a model's metadata `init`
 * records name (ir_metadata in src/ir_print.c writes them, tdslrt.c reads them back).
 * Included by the graph, the IR, the spec language and the runtime. */
#ifndef TDSL_ABI_H
#define TDSL_ABI_H

#include "tdsl.h"

/* ORDER: memory order (a tensor's cells are row-major over its batch, then output,
 * then input axes). Every array indexed by axis kind uses this numbering. */
enum { KIND_BATCH = TDSL_BATCH, KIND_OUTPUT = TDSL_OUTPUT, KIND_INPUT = TDSL_INPUT, NKINDS = 3 };

typedef enum InitKind {
  INIT_ZERO,    /* computed tensors and host-filled inputs */
  INIT_CONST,   /* every cell = value */
  INIT_VALUES,  /* literal cells in memory order (a shorter list repeats) */
  INIT_RANGE,   /* 0, 1, 2, ... in memory order */
  INIT_UNIFORM, /* threefry4x32 uniform [0,1), from the init seed */
  INIT_FILE,    /* raw little-endian float32 values from path */
} InitKind;

#endif
