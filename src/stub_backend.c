/* Placeholder until lowering and the gccjit backend land. */
#include <stdio.h>

#include "ctx.h"

int backend_main(Ctx *c, Graph *g) {
  (void)c; (void)g;
  fprintf(stderr, "tdslc: error: code generation is not implemented yet\n");
  return 2;
}
