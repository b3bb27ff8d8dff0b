/* spec_print.c: canonical rendering of einsum specs, row accessors, and the mapping of
 * spec columns back into the source text of the string literal. */
#include <stdlib.h>
#include <string.h>

#include "spec.h"

/* The printer writes into a small growable buffer first: whether a multi-character
 * spec needs a trailing ',' to stay multi-character is known only at the end. */
typedef struct Buf {
  char *s;
  size_t len, cap;
  size_t elem_end; /* where the last axis or row variable written ends */
} Buf;

static void put(Buf *b, const char *s) {
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->s = realloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, s, n + 1);
  b->len += n;
}

static void put_int(Buf *b, int v) {
  char tmp[16];
  snprintf(tmp, sizeof tmp, "%d", v);
  put(b, tmp);
}

static void put_coef(Buf *b, SpecCoef c) {
  if (c.ident)
    put(b, c.ident);
  else
    put_int(b, c.value);
}

static bool coef_is_one(SpecCoef c) { return !c.ident && c.value == 1; }

static void put_axis(Buf *b, const SpecAxis *x) {
  switch (x->kind) {
  case AX_VAR: put(b, x->name); break;
  case AX_FIXED: put_int(b, x->fixed); break;
  case AX_PLACEHOLDER: put(b, "_"); break;
  case AX_AFFINE:
    if (!coef_is_one(x->stride) || (x->conv == CONV_NONE && !x->kernel)) {
      put_coef(b, x->stride);
      put(b, "*");
    }
    put(b, x->name);
    if (x->conv == CONV_NONE && !x->kernel)
      break; /* 2*o */
    put(b, x->conv == CONV_PADDED ? "=+" : x->conv == CONV_VALID ? "<+" : "+");
    if (!x->kernel) {
      put_int(b, x->offset);
      break;
    }
    if (!coef_is_one(x->dilation)) {
      put_coef(b, x->dilation);
      put(b, "*");
    }
    put(b, x->kernel);
    break;
  }
}

/* Whether the last character written ends a number, so that a following number must
 * be separated (single-character mode reads "12" as one index). */
static bool ends_in_digit(const Buf *b) {
  return b->len > 0 && b->s[b->len - 1] >= '0' && b->s[b->len - 1] <= '9';
}

/* `...` stands for the row variable named after the kind of its row; any other name,
 * including another kind's (..input.. in an output row), keeps the ..name.. form. */
static void put_row(Buf *b, const SpecRow *r, const char *kind, bool multichar,
                    int *ncommas) {
  bool first = true;
  for (int part = 0; part < 3; part++) {
    if (part == 1 && !r->rowvar)
      continue;
    const PtrVec *v = part == 0 ? &r->left : &r->right;
    int n = part == 1 ? 1 : v->len;
    for (int k = 0; k < n; k++) {
      if (!first && multichar) {
        put(b, ", ");
        (*ncommas)++;
      }
      first = false;
      if (part == 1) {
        if (!strcmp(r->rowvar, kind)) {
          put(b, "...");
        } else {
          put(b, "..");
          put(b, r->rowvar);
          put(b, "..");
        }
        b->elem_end = b->len;
        continue;
      }
      const SpecAxis *x = VEC_AT(*v, SpecAxis, k);
      if (!multichar && x->kind == AX_FIXED && ends_in_digit(b))
        put(b, " ");
      put_axis(b, x);
      b->elem_end = b->len;
    }
  }
}

static void put_slot(Buf *b, const SpecSlot *s, bool multichar, int *ncommas) {
  if (s->has_batch) {
    put_row(b, &s->batch, "batch", multichar, ncommas);
    put(b, multichar ? " | " : "|");
  }
  if (s->has_input) {
    put_row(b, &s->input, "input", multichar, ncommas);
    put(b, multichar ? " -> " : "->");
  }
  put_row(b, &s->output, "output", multichar, ncommas);
}

void spec_print_slot(FILE *out, const SpecSlot *slot, bool multichar) {
  Buf b = {0};
  int ncommas = 0;
  put(&b, "");
  put_slot(&b, slot, multichar, &ncommas);
  fputs(b.s, out);
  free(b.s);
}

void spec_print(FILE *out, const Spec *s) {
  Buf b = {0};
  int ncommas = 0;
  put(&b, "");
  for (int k = 0; k < s->nargs; k++) {
    if (k > 0)
      put(&b, "; ");
    put_slot(&b, s->args[k], s->multichar, &ncommas);
  }
  if (s->nargs > 0)
    put(&b, " => ");
  put_slot(&b, s->result, s->multichar, &ncommas);
  /* No row had two axes and no affine axis says so: a trailing ',' after the last
   * axis keeps the spec in multi-character mode (a comma must follow an axis). */
  if (s->multichar && ncommas == 0 && !spec_is_multichar(b.s)) {
    size_t at = b.elem_end;
    put(&b, ",");
    memmove(b.s + at + 1, b.s + at, b.len - at - 1);
    b.s[at] = ',';
  }
  fputs(b.s, out);
  free(b.s);
}

SpecRow *spec_slot_row(SpecSlot *slot, int kind) {
  return kind == KIND_BATCH ? &slot->batch : kind == KIND_OUTPUT ? &slot->output : &slot->input;
}

int spec_row_len(const SpecRow *r) { return r->left.len + r->right.len; }

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Walks the literal from its opening quote, decoding one byte of the string per step,
 * until the col-th byte: its first source character is the answer. */
Loc spec_error_loc(Loc string_loc, int col) {
  Loc r = string_loc;
  if (col < 0)
    col = 0;
  if (!string_loc.file || !string_loc.file->text || string_loc.line < 1) {
    r.col = string_loc.col + 1 + col;
    return r;
  }
  const char *text = string_loc.file->text, *end = text + string_loc.file->len;
  const char *s = text;
  for (int line = 1; line < string_loc.line && s < end; s++)
    if (src_eol(s, end))
      line++;
  s += string_loc.col - 1; /* the quote */
  if (s >= end || *s != '"') {
    r.col = string_loc.col + 1 + col;
    return r;
  }
  int line = string_loc.line, c = string_loc.col;
  s++, c++;
  for (int k = 0; s < end && *s != '"'; k++) {
    if (k == col)
      break;
    int adv = 1;
    if (*s == '\\' && s + 1 < end) {
      char e = s[1];
      adv = 2;
      if (e == 'x') {
        /* at most two hex digits, as the lexer's escape() reads */
        while (adv < 4 && s + adv < end && hexval(s[adv]) >= 0)
          adv++;
      } else if (e >= '0' && e <= '7') {
        while (adv < 4 && s + adv < end && s[adv] >= '0' && s[adv] <= '7')
          adv++;
      } else if (e == '\n') {
        /* a line continuation decodes to nothing */
        s += 2, line++, c = 1, k--;
        continue;
      }
    }
    for (int i = 0; i < adv; i++, s++) {
      if (src_eol(s, end))
        line++, c = 1;
      else
        c++;
    }
  }
  r.line = line;
  r.col = c;
  return r;
}
