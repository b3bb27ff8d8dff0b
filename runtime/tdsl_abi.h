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

/* What a tensor is for (the metadata's `role` lines, tdsl_tensor_info.role): a
 * parameter; a gradient (a grad buffer, never a Tensor's own role); optimizer state (a
 * %cd-declared tensor that code updates from its own previous value, such as a momentum);
 * a host input (a %cd-declared tensor no code writes); a constant; or an intermediate.
 * The values and names (tdsl_role_name) are tdsl.h's public ones. */
typedef tdsl_role TensorRole;
enum {
  ROLE_INTERMEDIATE = TDSL_ROLE_INTERMEDIATE, ROLE_PARAM = TDSL_ROLE_PARAM, ROLE_GRAD = TDSL_ROLE_GRAD,
  ROLE_OPTIMIZER = TDSL_ROLE_OPTIMIZER, ROLE_INPUT = TDSL_ROLE_INPUT, ROLE_CONST = TDSL_ROLE_CONST,
};

typedef enum InitKind {
  INIT_ZERO,    /* computed tensors and host-filled inputs */
  INIT_CONST,   /* every cell = value */
  INIT_VALUES,  /* literal cells in memory order (a shorter list repeats) */
  INIT_RANGE,   /* 0, 1, 2, ... in memory order */
  INIT_UNIFORM, /* threefry4x32 uniform [0,1), from the init seed */
  INIT_FILE,    /* raw little-endian float32 values from path */
  INIT_EXPR,    /* an initializer expression: a per-cell postfix program (graph.h InitOp) */
} InitKind;

/* The header of a model instance (ir.h ir_layout), before its first buffer: slots the
 * runtime owns (void *[8]: a cuda model's context and launch function, the parallel-loop
 * hook), then a --check-bounds model's fault word (int, nonzero once a check failed) and
 * its message (char[INST_FAULT_MSG_LEN]). The fault lives in the instance, not in the
 * model's globals, so that instances faulting in separate threads stay separate. */
enum {
  INST_RT_SLOTS = 8,
  INST_FAULT = 64,
  INST_FAULT_MSG = 128,
  INST_FAULT_MSG_LEN = 512,
  INST_HEADER = INST_FAULT_MSG + INST_FAULT_MSG_LEN,
};

/* Dynamic dimensions: wherever a dimension is stored as an int (graph.h
 * DimDecl.d and Projections.iter_size, ir.h IrBuf.dims) a value d < 0 is the dynamic size
 * number -1 - d (graph.h DimSym, ir.h IrDim); d > 0 is a static size; d == 0 unknown
 * (only after an inference error). */
#define DIM_DYN(id) (-1 - (id))
#define DIM_IS_DYN(d) ((d) < 0)
#define DIM_DYN_ID(d) (-1 - (d))

#endif
