/* ast_print.c: the S-expression rendering of the AST (tdslc --dump-ast), one line per
 * top-level item. Tests match it textually, so keep the format stable:
 *   (let%op NAME [(params P...)] BODY [(and NAME [(params ...)] BODY)]...)
 *   (int 4) (float 1.) (string "s") (bool true) (unit) (ident x) (labeled-num q N)
 *   (app F ARG...)        ARG = E | (~label E) | (?label E)
 *   (binop OP A B) (unop OP A) (einsum OP A [B] SPEC) (opref OP) (dyndim) for `?`
 *   (fun (params P...) BODY) (let-in (NAME [(params ...)] BODY)... BODY)
 *   (if C T [E]) (seq E...) (tuple E...) (list E...) (array E...) (field E NAME)
 *   (record NAME [(= INIT)] (FIELD E)...) (assign OP LHS RHS [(~logic E)]...)
 *   (for NAME E BODY) (comment (PART...) BODY)
 *   P = x | _ | ~x | ?x | (?x DEFAULT) | () */
#include <string.h>

#include "ast.h"

static void print_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\t': fputs("\\t", out); break;
    default:
      if (*p < 0x20 || *p >= 0x7f) fprintf(out, "\\x%02x", *p);
      else fputc(*p, out);
    }
  }
  fputc('"', out);
}

static void print_params(FILE *out, const PtrVec *params) {
  if (!params->len) return;
  fputs(" (params", out);
  for (int i = 0; i < params->len; i++) {
    const Param *p = params->items[i];
    const char *n = p->name ? p->name : "_";
    switch (p->kind) {
    case P_POS: fprintf(out, " %s", n); break;
    case P_LABELED: fprintf(out, " ~%s", n); break;
    case P_UNIT: fputs(" ()", out); break;
    case P_OPTIONAL:
      if (!p->deflt) {
        fprintf(out, " ?%s", n);
      } else {
        fprintf(out, " (?%s ", n);
        ast_print_expr(out, p->deflt);
        fputc(')', out);
      }
      break;
    }
  }
  fputc(')', out);
}

/* NAME [(params ...)] BODY */
static void print_binding(FILE *out, const Binding *b) {
  if (b->is_operator) fprintf(out, "(op %s)", b->name);
  else fputs(b->name ? b->name : "_", out);
  print_params(out, &b->params);
  fputc(' ', out);
  ast_print_expr(out, b->body);
}

static void print_items(FILE *out, const PtrVec *v) {
  for (int i = 0; i < v->len; i++) {
    fputc(' ', out);
    ast_print_expr(out, v->items[i]);
  }
}

static void print_args(FILE *out, const PtrVec *args) {
  for (int i = 0; i < args->len; i++) {
    const Arg *a = args->items[i];
    fputc(' ', out);
    if (a->kind == A_POS) {
      ast_print_expr(out, a->e);
      continue;
    }
    fprintf(out, "(%c%s ", a->kind == A_LABELED ? '~' : '?', a->label);
    ast_print_expr(out, a->e);
    fputc(')', out);
  }
}

void ast_print_expr(FILE *out, const Expr *e) {
  if (!e) {
    fputs("(null)", out);
    return;
  }
  switch (e->kind) {
  case E_INT: fprintf(out, "(int %lld)", e->ival); return;
  case E_FLOAT:
    if (e->str) fprintf(out, "(float %s)", e->str);
    else fprintf(out, "(float %.17g)", e->fval);
    return;
  case E_STRING:
    fputs("(string ", out);
    print_string(out, e->str);
    fputc(')', out);
    return;
  case E_BOOL: fprintf(out, "(bool %s)", e->ival ? "true" : "false"); return;
  case E_UNIT: fputs("(unit)", out); return;
  case E_IDENT: fprintf(out, "(ident %s)", e->str); return;
  case E_OPREF: fprintf(out, "(opref %s)", e->str); return;
  case E_DYNDIM: fputs("(dyndim)", out); return;
  case E_NDLIT: { /* as the tokens' tree: packing changes no dump */
    Arena tmp = {0};
    ast_print_expr(out, ndlit_expand(&tmp, e->lit));
    arena_free(&tmp);
    return;
  }
  case E_LABELED_NUM:
    fprintf(out, "(labeled-num %s ", e->str);
    ast_print_expr(out, e->a);
    fputc(')', out);
    return;
  case E_APP:
    fputs("(app ", out);
    ast_print_expr(out, e->a);
    print_args(out, &e->args);
    fputc(')', out);
    return;
  case E_BINOP: case E_UNOP: case E_EINSUM:
    fprintf(out, "(%s %s ", e->kind == E_BINOP ? "binop" : e->kind == E_UNOP ? "unop" : "einsum", e->str);
    ast_print_expr(out, e->a);
    if (e->b) {
      fputc(' ', out);
      ast_print_expr(out, e->b);
    }
    if (e->kind == E_EINSUM) {
      fputc(' ', out);
      ast_print_expr(out, e->c);
      if (e->items.len) {
        fputs(" (captures", out);
        for (int i = 0; i < e->items.len; i++) {
          fputc(' ', out);
          ast_print_expr(out, VEC_AT(e->items, Expr, i));
        }
        fputc(')', out);
      }
    }
    fputc(')', out);
    return;
  case E_FUN:
    fputs("(fun", out);
    print_params(out, &e->params);
    fputc(' ', out);
    ast_print_expr(out, e->a);
    fputc(')', out);
    return;
  case E_LET:
    fputs("(let-in", out);
    for (int i = 0; i < e->bindings.len; i++) {
      fputs(" (", out);
      print_binding(out, e->bindings.items[i]);
      fputc(')', out);
    }
    fputc(' ', out);
    ast_print_expr(out, e->a);
    fputc(')', out);
    return;
  case E_IF:
    fputs("(if ", out);
    ast_print_expr(out, e->a);
    fputc(' ', out);
    ast_print_expr(out, e->b);
    if (e->c) {
      fputc(' ', out);
      ast_print_expr(out, e->c);
    }
    fputc(')', out);
    return;
  case E_SEQ: case E_TUPLE: case E_LIST: case E_ARRAY:
    fputs(e->kind == E_SEQ ? "(seq" : e->kind == E_TUPLE ? "(tuple" : e->kind == E_LIST ? "(list" : "(array",
          out);
    print_items(out, &e->items);
    fputc(')', out);
    return;
  case E_RECORD:
    fprintf(out, "(record %s", e->str);
    if (e->a) {
      fputs(" (= ", out);
      ast_print_expr(out, e->a);
      fputc(')', out);
    }
    for (int i = 0; i < e->fields.len; i++) {
      const Field *f = e->fields.items[i];
      fprintf(out, " (%s ", f->name);
      ast_print_expr(out, f->e);
      fputc(')', out);
    }
    fputc(')', out);
    return;
  case E_FIELD:
    fputs("(field ", out);
    ast_print_expr(out, e->a);
    fprintf(out, " %s)", e->str);
    return;
  case E_ASSIGN:
    fprintf(out, "(assign %s ", e->str);
    ast_print_expr(out, e->a);
    fputc(' ', out);
    ast_print_expr(out, e->b);
    print_args(out, &e->args);
    fputc(')', out);
    return;
  case E_FOR:
    fprintf(out, "(for %s ", e->str);
    ast_print_expr(out, e->a);
    fputc(' ', out);
    ast_print_expr(out, e->b);
    fputc(')', out);
    return;
  case E_COMMENT:
    fputs("(comment (", out);
    for (int i = 0; i < e->items.len; i++) {
      if (i) fputc(' ', out);
      ast_print_expr(out, e->items.items[i]);
    }
    fputs(") ", out);
    ast_print_expr(out, e->a);
    fputc(')', out);
    return;
  }
  fputs("(?)", out);
}

static const char *item_head(ItemKind k) {
  switch (k) {
  case I_LET: return "let";
  case I_LET_OP: return "let%op";
  case I_LET_CD: return "let%cd";
  case I_OPEN: return "open";
  case I_OPDEF: return "op";
  }
  return "?";
}

static void print_item(FILE *out, const Item *it) {
  fprintf(out, "(%s", item_head(it->kind));
  switch (it->kind) {
  case I_OPEN:
    fputc(' ', out);
    print_string(out, it->path);
    break;
  case I_OPDEF: {
    const OpDef *op = it->op;
    fprintf(out, " %s", op->name);
    print_params(out, &op->params);
    if (op->logic) {
      fputs(" (logic ", out);
      ast_print_expr(out, op->logic);
      fputc(')', out);
    }
    fputs(" (forward ", out);
    ast_print_expr(out, op->forward);
    fputc(')', out);
    if (op->backward) {
      fputs(" (backward ", out);
      ast_print_expr(out, op->backward);
      fputc(')', out);
    }
    break;
  }
  default:
    for (int i = 0; i < it->bindings.len; i++) {
      fputs(i ? " (and " : " ", out);
      print_binding(out, it->bindings.items[i]);
      if (i) fputc(')', out);
    }
  }
  fputs(")\n", out);
}

void ast_print_program(FILE *out, const Program *p) {
  for (int i = 0; i < p->items.len; i++) print_item(out, p->items.items[i]);
}
