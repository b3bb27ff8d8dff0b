/* Placeholder until shape inference (src/infer*.c) lands. */
#include <stdio.h>
#include <stdlib.h>

#include "ctx.h"

bool infer_shapes(Ctx *c, Graph *g) {
  (void)c; (void)g;
  fprintf(stderr, "tdslc: error: shape inference is not implemented yet\n");
  exit(2);
}
bool infer_projections(Ctx *c, Graph *g) { (void)c; (void)g; return false; }
void dump_shapes(FILE *out, const Graph *g, bool json) { (void)out; (void)g; (void)json; }
void dump_projections(FILE *out, const Graph *g, bool json) { (void)out; (void)g; (void)json; }
