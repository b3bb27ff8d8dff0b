/* json.c: the JSON writer of tdslc's fixed output formats (json.h). */
#include <stdlib.h>

#include "json.h"

void json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
    else if (ch < 0x20) fprintf(out, "\\u%04x", ch);
    else fputc(ch, out);
  }
  fputc('"', out);
}

void json_printed(FILE *out, void (*print)(FILE *, const void *), const void *arg) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (mem) {
    print(mem, arg);
    fclose(mem);
  }
  json_str(out, text);
  free(text);
}

void json_dims(FILE *out, const int *dims, int n) {
  fputc('[', out);
  for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? "," : "", dims[i]);
  fputc(']', out);
}

void json_shape_fields(FILE *out, const char *name, const JsonShape *how, const void *arg) {
  static const struct { int kind; const char *field; } order[NKINDS] = {
      {KIND_BATCH, "batch"}, {KIND_INPUT, "input"}, {KIND_OUTPUT, "output"}};
  fputs("{\"name\":", out);
  json_str(out, name);
  fputs(",\"shape\":", out);
  json_printed(out, how->text, arg);
  for (int r = 0; r < NKINDS; r++) {
    fprintf(out, ",\"%s\":", order[r].field);
    how->row(out, arg, order[r].kind);
  }
}
