/* The emulation shim refuses a misaligned 128-bit access (a fault on a GPU) as it does a
 * misaligned ldmatrix or cp.async: shim-align.test. argv[1]: "ok", "ld", "st", "ldm",
 * "cp". */
#include <string.h>

int main(int argc, char **argv) {
  static float buf[16] __attribute__((aligned(16))) = {1, 2, 3, 4, 5, 6, 7, 8};
  const char *what = argc > 1 ? argv[1] : "ok";
  float4 v = TDSL_LD4(&buf[4]); /* aligned: reads 5..8 */
  TDSL_ST4(&buf[8], v);
  if (!strcmp(what, "ld")) v = TDSL_LD4(&buf[1]);
  if (!strcmp(what, "st")) TDSL_ST4(&buf[2], v);
  if (!strcmp(what, "ldm")) {
    unsigned d[4];
    tdsl_ldm4(d, (const unsigned *)&buf[1]);
  }
  if (!strcmp(what, "cp")) tdsl_cp16((unsigned *)&buf[3], buf, 16);
  printf("%g %g %g %g\n", buf[8], buf[9], buf[10], buf[11]);
  return 0;
}
