/* fuzz_parse.c: libFuzzer harness for the front end. Parses the input as a .tdsl file,
 * prints the AST, and runs the einsum spec parser on every string literal. Any crash,
 * sanitizer report, leak or hang is a bug: the parser must only report diagnostics. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ast.h"
#include "diag.h"
#include "spec.h"

static void walk(Arena *a, FILE *out, const Expr *e);

static void walk_vec(Arena *a, FILE *out, const PtrVec *v) {
  for (int i = 0; i < v->len; i++) walk(a, out, v->items[i]);
}

static void walk(Arena *a, FILE *out, const Expr *e) {
  if (!e) return;
  if (e->kind == E_STRING) {
    int col;
    const char *msg;
    Spec *s = spec_parse(a, e->str, &col, &msg);
    if (s) spec_print(out, s);
  }
  walk(a, out, e->a);
  walk(a, out, e->b);
  walk(a, out, e->c);
  walk_vec(a, out, &e->items);
  for (int i = 0; i < e->args.len; i++) walk(a, out, VEC_AT(e->args, Arg, i)->e);
  for (int i = 0; i < e->fields.len; i++) walk(a, out, VEC_AT(e->fields, Field, i)->e);
  for (int i = 0; i < e->params.len; i++) walk(a, out, VEC_AT(e->params, Param, i)->deflt);
  for (int i = 0; i < e->bindings.len; i++) walk(a, out, VEC_AT(e->bindings, Binding, i)->body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *sink = fopen("/dev/null", "w");
  if (!sink) return 0;
  Arena arena = {0};
  SrcFile f = {"fuzz.tdsl", arena_strndup(&arena, (const char *)data, size), size};
  Diag d;
  diag_init(&d, sink);
  Program *p = parse_program(&arena, &d, &f);
  if (p) {
    ast_print_program(sink, p);
    for (int i = 0; i < p->items.len; i++) {
      const Item *it = p->items.items[i];
      for (int j = 0; j < it->bindings.len; j++) walk(&arena, sink, VEC_AT(it->bindings, Binding, j)->body);
      if (it->op) {
        walk(&arena, sink, it->op->logic);
        walk(&arena, sink, it->op->forward);
        walk(&arena, sink, it->op->backward);
      }
    }
  }
  arena_free(&arena);
  fclose(sink);
  return 0;
}
