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
  json_dims(o, d, 3, true);
  json_dims(o, d, 3, false);
  json_dims(o, d, 0, true);
}

static void shape_text(FILE *o, const void *arg) { fputs(arg, o); }

static void fields(FILE *o) {
  int b[] = {2}, i[] = {3, 4}, out[] = {5};
  JsonRow r[NKINDS];
  r[KIND_BATCH] = (JsonRow){b, 1}, r[KIND_INPUT] = (JsonRow){i, 2}, r[KIND_OUTPUT] = (JsonRow){out, 1};
  json_shape_fields(o, "w\"1", shape_text, "2|3,4->l=5", r, true);
}

static void expect(void (*write)(FILE *), const char *want) {
  char *got = captured(write);
  CHECK(got && !strcmp(got, want), "got '%s', want '%s'", got ? got : "(null)", want);
  free(got);
}

int main(void) {
  expect(strings, "\"a\\\"b\\\\c\\u000ad\\u0009e\\u0001/é\" \"\"");
  expect(rows, "[3,null,7][3,0,7][]");
  expect(fields, "{\"name\":\"w\\\"1\",\"shape\":\"2|3,4->l=5\",\"batch\":[2],\"input\":[3,4],\"output\":[5]");
  return tk_exit("test_json");
}
