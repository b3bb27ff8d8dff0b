/* json.h: the JSON lines tdslc prints (tdslc(1): --dump-shapes=json and --run --json,
 * fixed formats). One writer for strings and for the shape fields a tensor's record
 * starts with, so that the two outputs escape alike and keep one field order. */
#ifndef TDSL_JSON_H
#define TDSL_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "tdsl_abi.h"

/* s as a JSON string literal, quotes included (NULL: ""). */
void json_str(FILE *out, const char *s);

/* What print writes, as one JSON string (a name or a label may hold any character). */
void json_printed(FILE *out, void (*print)(FILE *, const void *), const void *arg);

/* `[d,...]`. zero_is_null: a 0 is a dimension not inferred (shapes printed after an
 * inference error) and is written null. */
void json_dims(FILE *out, const int *dims, int n, bool zero_is_null);

/* A row of dimensions of a tensor. */
typedef struct JsonRow {
  const int *dims;
  int n;
} JsonRow;

/* `{"name":NAME,"shape":SHAPE,"batch":[..],"input":[..],"output":[..]` with the shape
 * text from print_shape(arg) and rows[] by KIND_* (memory order; the fields are in the
 * order the shape is written, b|i->o). The caller adds its fields and the closing brace. */
void json_shape_fields(FILE *out, const char *name, void (*print_shape)(FILE *, const void *), const void *arg,
                       const JsonRow rows[NKINDS], bool zero_is_null);

#endif
