/* A statically linked model's routines through --emit-header's inline functions (each
 * a loop over its runs of NAME_call) against the same routines through tdsl_call (the
 * runtime walking the metadata's runs): two instances from the same init and inputs,
 * every tensor compared bitwise after train_step, h30.forward and h30.backprop
 * (lit backend/header-runs.test). */
#include <stdio.h>
#include <string.h>

#include "mlp.h"
#include "tdsl.h"

static int same(tdsl_model *a, tdsl_model *b, const char *after) {
  int differ = 0;
  for (int i = 0; i < tdsl_num_tensors(a); i++) {
    tdsl_tensor_info x, y;
    if (tdsl_tensor(a, i, &x) || tdsl_tensor(b, i, &y) || x.size != y.size ||
        memcmp(x.data, y.data, (size_t)x.size * (x.elem == TDSL_F64 ? 8 : 4)))
      differ++;
  }
  printf("after %s: %d tensors, %d differ\n", after, tdsl_num_tensors(a), differ);
  return differ;
}

int main(void) {
  char err[256];
  tdsl_model *a = tdsl_open_resolved(mlp_resolve, NULL, err, sizeof err), *b = a ? tdsl_open_resolved(mlp_resolve, NULL, err, sizeof err) : NULL;
  if (!a || !b) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  float xs[10 * 4], ys[10];
  for (int i = 0; i < 40; i++) xs[i] = (float)((i * 7) % 11) / 11.0f - 0.4f;
  for (int i = 0; i < 10; i++) ys[i] = i % 2 ? 1.0f : -1.0f;
  tdsl_model *m[2] = {a, b};
  for (int k = 0; k < 2; k++)
    if (tdsl_init(m[k], 3) || tdsl_write(m[k], "xs", xs, 40) || tdsl_write(m[k], "ys", ys, 10)) {
      fprintf(stderr, "init: %s\n", tdsl_error(m[k]));
      return 1;
    }
  int bad = 0;
  mlp_train_step(tdsl_instance(a));
  bad += tdsl_call(b, "train_step") != 0 || same(a, b, "train_step");
  mlp_h30_forward(tdsl_instance(a));
  bad += tdsl_call(b, "h30.forward") != 0 || same(a, b, "h30.forward");
  mlp_h30_backprop(tdsl_instance(a));
  bad += tdsl_call(b, "h30.backprop") != 0 || same(a, b, "h30.backprop");
  tdsl_close(a);
  tdsl_close(b);
  return bad != 0;
}
