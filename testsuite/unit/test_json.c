/* The JSON writer of the fixed output formats (src/json.c): escaping, dimension rows,
 * and the shape fields' order, compared with text written by hand from RFC 8259. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "testkit.h"

/* What write(out) prints, as a malloc'ed string. */
static char *captured(void (*write)(FILE *out)) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  write(m);
  fclose(m);
  return buf;
}

static void strings(FILE *o) {
  json_str(o, "a\"b\\c\nd\te\x01/é");
  fputc(' ', o);
  json_str(o, NULL);
}

static void rows(FILE *o) {
  int d[] = {3, 0, 7};
  json_dims(o, d, 3);
  json_dims(o, d, 0);
}

/* A tensor whose shape text is "2|3,4->l=5" and whose row k is [k]. */
static void shape_text(FILE *o, const void *arg) { fputs(arg, o); }
static void shape_row(FILE *o, const void *arg, int kind) { fprintf(o, "[%d]", kind); }

static void fields(FILE *o) {
  static const JsonShape how = {shape_text, shape_row};
  json_shape_fields(o, "w\"1", &how, "2|3,4->l=5");
}

static void expect_str(void (*write)(FILE *), const char *want) {
  char *got = captured(write);
  CHECK(got && !strcmp(got, want), "got '%s', want '%s'", got ? got : "(null)", want);
  free(got);
}

int main(void) {
  expect_str(strings, "\"a\\\"b\\\\c\\u000ad\\u0009e\\u0001/é\" \"\"");
  expect_str(rows, "[3,0,7][]");
  /* the rows in the order the shape is written (b|i->o), whatever KIND_*'s order */
  char want[160];
  snprintf(want, sizeof want, "{\"name\":\"w\\\"1\",\"shape\":\"2|3,4->l=5\",\"batch\":[%d],\"input\":[%d],\"output\":[%d]",
           KIND_BATCH, KIND_INPUT, KIND_OUTPUT);
  expect_str(fields, want);
  return tk_exit("test_json");
}
