/* Placeholder until staging (src/eval*.c) lands. */
#include <stdio.h>
#include <stdlib.h>

#include "ctx.h"

Graph *stage_program(Ctx *c, const Program *p) {
  (void)c; (void)p;
  fprintf(stderr, "tdslc: error: staging is not implemented yet\n");
  exit(2);
}
void graph_print(FILE *out, const Graph *g) { (void)out; (void)g; }
