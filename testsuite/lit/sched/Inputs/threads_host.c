/* threads_host.c: runs the routines of threads_exact.py's model on 2 threads of the
 * runtime's pool, 3 times each: the TSan run of lit/sched/threads.test (the pool's
 * publication of loops, a parallel kernel's block shared through the caller's stack).
 *   usage: threads_host MODEL.so   prints "ok" */
#include <stdio.h>

#include "tdsl.h"

int main(int argc, char **argv) {
  char err[512];
  tdsl_model *m = argc > 1 ? tdsl_open(argv[1], err, sizeof err) : NULL;
  if (!m) {
    fprintf(stderr, "threads_host: %s\n", argc > 1 ? err : "usage: threads_host MODEL.so");
    return 2;
  }
  static const char *const routines[] = {"train_step", "cstep", "cs.forward"};
  int bad = tdsl_init(m, 1) || tdsl_set_num_threads(m, 2);
  for (int rep = 0; rep < 3 && !bad; rep++)
    for (int r = 0; r < 3 && !bad; r++) bad = tdsl_call(m, routines[r]) != 0;
  if (bad) fprintf(stderr, "threads_host: %s\n", tdsl_error(m));
  tdsl_close(m);
  puts(bad ? "failed" : "ok");
  return bad;
}
