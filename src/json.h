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

/* `[d,...]`: sizes. */
void json_dims(FILE *out, const int *dims, int n);

/* How a tensor's shape is written: its text (b|i->o) and each row, by KIND_*, as a JSON
 * array. */
typedef struct JsonShape {
  void (*text)(FILE *out, const void *arg);
  void (*row)(FILE *out, const void *arg, int kind);
} JsonShape;

/* `{"name":NAME,"shape":TEXT,"batch":[..],"input":[..],"output":[..]` (the rows in the
 * order the shape is written); the caller adds its fields and the closing brace. */
void json_shape_fields(FILE *out, const char *name, const JsonShape *how, const void *arg);

#endif
