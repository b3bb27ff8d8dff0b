/* Runtime misuse beyond misuse.c: closed models, files that are not plain files,
 * symbolic links, holds on reallocated storage. Every call reports its status and
 * message; nothing may crash, hang or touch freed memory (built with ASan). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tdsl.h"

#define SHOW(label, expr)                                                     \
  do {                                                                        \
    int rc_ = (expr);                                                         \
    printf("%s: %d %s\n", label, rc_, rc_ ? tdsl_error(m) : "");              \
  } while (0)

static int is(const char *path, mode_t kind) {
  struct stat st;
  return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == kind;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  umask(022);
  char err[256];
  tdsl_model *m = tdsl_open("m.so", err, sizeof err);
  if (!m) return puts(err), 1;
  tdsl_init(m, 1);
  long dims[2] = {4, 2};
  float xs[8] = {1, 2, 3, 4, 5, 6, 7, 8};

  /* a refused write changes nothing: the dimension stays unset */
  SHOW("write_shaped NULL", tdsl_write_shaped(m, "x", NULL, 2, dims));
  SHOW("write_shaped_f64 NULL", tdsl_write_shaped_f64(m, "x", NULL, 2, dims));
  long b = -1;
  tdsl_get_dim(m, "b", &b);
  printf("b after refused writes: %ld\n", b);
  SHOW("write_shaped", tdsl_write_shaped(m, "x", xs, 2, dims));

  /* a held block outlives its reallocation, and is freed by the last release */
  tdsl_tensor_info ti;
  tdsl_tensor_by_name(m, "x", &ti);
  float *old = ti.data;
  SHOW("hold", tdsl_hold(m, old));
  SHOW("hold again", tdsl_hold(m, old));
  SHOW("set_dim", tdsl_set_dim(m, "b", 1000));
  printf("held block: %g %g\n", old[0], old[7]);
  SHOW("release", tdsl_release(m, old));
  printf("held block: %g\n", old[7]);
  SHOW("release last", tdsl_release(m, old));
  SHOW("release again", tdsl_release(m, old) < 0 ? -1 : 0);
  SHOW("hold static", tdsl_hold(m, tdsl_tensor_by_name(m, "w", &ti) ? NULL : ti.data));
  SHOW("release static", tdsl_release(m, ti.data));
  SHOW("hold NULL", tdsl_hold(m, NULL));
  SHOW("hold stack", tdsl_hold(m, xs) < 0 ? -1 : 0);
  tdsl_tensor_by_name(m, "x", &ti);
  SHOW("hold unreleased", tdsl_hold(m, ti.data)); /* tdsl_close frees it */

  /* saving through a symbolic link replaces the file it names; the link stays */
  SHOW("save target", tdsl_save(m, "target.st", TDSL_SAVE_ALL));
  symlink("target.st", "link.st");
  tdsl_set_dim(m, "b", 3);
  SHOW("save link", tdsl_save(m, "link.st", TDSL_SAVE_ALL));
  printf("link.st is a link: %d\n", is("link.st", S_IFLNK));
  struct stat st;
  stat("target.st", &st);
  printf("target.st mode %o\n", (unsigned)(st.st_mode & 0777));
  SHOW("load link", tdsl_load(m, "link.st"));

  /* a FIFO is written as it is (like /dev/null), never replaced by a regular file;
   * reading one is refused instead of blocking for a writer */
  mkfifo("fifo", 0600);
  int rd = open("fifo", O_RDONLY | O_NONBLOCK);
  SHOW("save fifo", tdsl_save(m, "fifo", TDSL_SAVE_PARAMS));
  char head[9] = {0};
  printf("fifo is a fifo: %d, read %zd bytes\n", is("fifo", S_IFIFO), read(rd, head, 8));
  close(rd);
  SHOW("load fifo", tdsl_load(m, "fifo"));
  SHOW("load_file fifo", tdsl_load_file(m, "w", "fifo"));

  /* a closed model: refused, never read */
  tdsl_close(m);
  printf("after close: %s\n", tdsl_error(m));
  SHOW("call after close", tdsl_call(m, "y.forward"));
  SHOW("read after close", tdsl_read(m, "w", xs, 6));
  printf("counts after close: %d %d %p\n", tdsl_num_tensors(m), tdsl_num_routines(m), tdsl_instance(m));
  tdsl_close(m);
  puts("closed twice");
  return 0;
}
