/* A static host of the --check-bounds model "oob" that test_fault.c writes (tdslc -c or
 * --emit-c, and --emit-header), compiled by it under ASan+UBSan or TSan: two linked-in
 * instances in two threads, one faulting (fault_run.h). Exits 0 if all went as expected. */
#include "fault_run.h"
#include "oob.h"

int main(void) {
  char err[256];
  tdsl_model *a = tdsl_open_resolved(oob_resolve, NULL, err, sizeof err);
  tdsl_model *b = a ? tdsl_open_resolved(oob_resolve, NULL, err, sizeof err) : NULL;
  if (!b) {
    printf("open: %s\n", err);
    return 1;
  }
  bool ok = fault_run_pair(a, b, "static");
  tdsl_close(a);
  tdsl_close(b);
  return ok ? 0 : 1;
}
