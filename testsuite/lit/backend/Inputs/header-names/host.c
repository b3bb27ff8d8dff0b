/* The --emit-header of a model whose names clash in C (clash.tdsl): each accessor is
 * the storage of the tensor its comment names, the header's own names (NAME_call,
 * NAME_resolve, NAME_dim_D, NAME_sym_S) keep their meaning, and the header compiles
 * with -Wall -Werror (no macro defined twice). */
#include <stdio.h>

#include "clash.h"
#include "tdsl.h"

static int same(tdsl_model *m, const char *name, const void *p) {
  tdsl_tensor_info ti;
  return !tdsl_tensor_by_name(m, name, &ti) && ti.data == p;
}

int main(void) {
  char err[256];
  tdsl_model *m = tdsl_open_resolved(clash_resolve, NULL, err, sizeof err);
  if (!m) return puts(err), 1;
  void *in = tdsl_instance(m);
  tdsl_init(m, 1);
  tdsl_set_dim(m, "n", 4);
  printf("w.grad %d w_grad %d\n", same(m, "w.grad", clash_w_grad(in)), same(m, "w_grad", clash_w_grad_2(in)));
  printf("call %d resolve %d y_forward %d t_2 %d t#2 %d\n", same(m, "call", clash_call_2(in)),
         same(m, "resolve", clash_resolve_2(in)), same(m, "y_forward", clash_y_forward(in)),
         same(m, "t_2", clash_t_2_2(in)), same(m, "t#2", clash_t_2(in)));
  printf("dim_n %d sym_i %d\n", same(m, "dim_n", clash_dim_n_2(in)), same(m, "sym_i", clash_sym_i_2(in)));
  clash_sym_i(in) = 1;
  long v;
  tdsl_get_index(m, "i", &v);
  printf("n = %d, i = %ld\n", clash_dim_n(in), v);
  clash_step(in);
  clash_y_forward_2(in); /* the routine y.forward */
  printf("z.forward: %d\n", tdsl_call(m, "z.forward"));
  tdsl_close(m);
  return 0;
}
