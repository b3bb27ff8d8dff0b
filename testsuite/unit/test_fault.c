/* --check-bounds never aborts and its faults are per instance: tdsl_call returns -1 with
 * the message in the faulting instance only, while another instance of the same model
 * runs in range in another thread (fault_run.h). In process through the gccjit backend;
 * then (plain build only: the commands are the same under ASan) static hosts linking the
 * model as tdslc -c and --emit-c give it, with --emit-header's resolver, compiled under
 * ASan+UBSan and, for the --emit-c rendering, TSan. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_run.h"
#include "graph_builder.h"

static void test_jit_instances(void) {
  GB b;
  gb_init(&b);
  gb_symbol_graph_at(&b, 2);
  CHECK(gb_open(&b, 1, false, true));
  char err[256];
  tdsl_model *second = b.m ? tdsl_open_resolved(gb_resolve, b.jr, err, sizeof err) : NULL;
  CHECK(second != NULL);
  if (second) {
    CHECK(fault_run_pair(b.m, second, "gccjit"));
    tdsl_close(second);
  }
  gb_free(&b);
}

/* The model's files for a static host: oob.o (gccjit object), oob.c (--emit-c), oob.h. */
static bool write_model(Arena *a, const IrModule *ir, const char *dir) {
  JitOpts o = {.name = "oob", .opt_level = 1, .check_bounds = true};
  if (!jit_compile_file(a, ir, &o, arena_printf(a, "%s/oob.o", dir), true)) return false;
  FILE *c = fopen(arena_printf(a, "%s/oob.c", dir), "w"), *h = fopen(arena_printf(a, "%s/oob.h", dir), "w");
  if (c) emit_c(c, ir, true, false, "oob");
  if (h) emit_header(h, ir, "oob", NULL);
  return c && h && !fclose(c) && !fclose(h);
}

/* Compiles fault_host.c with the model file and the runtime's sources under the given
 * sanitizer and runs it. */
static int run_host(Arena *a, const char *dir, const char *model, const char *san, const char *env) {
  const char *exe = arena_printf(a, "%s/host-%s-%s", dir, strncmp(san, "thread", 6) ? "asan" : "tsan", model);
  int rc = system(arena_printf(a,
                               "cc -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=%s -Iruntime -Itestsuite/unit -I%s -o %s "
                               "testsuite/unit/fault_host.c %s/%s runtime/*.c -ldl -lm -lcjson -lpthread",
                               san, dir, exe, dir, model));
  if (rc) return rc;
  return system(arena_printf(a, "%s %s", env, exe));
}

static void test_static_hosts(void) {
  GB b;
  gb_init(&b);
  gb_symbol_graph_at(&b, 2);
  b.ir = lower_graph(&b.a, &b.d, &b.g, false);
  char dir[] = "/tmp/tdsl-fault-XXXXXX";
  CHECK(b.ir && mkdtemp(dir));
  if (!b.ir || !write_model(&b.a, b.ir, dir)) {
    tk_fail("cannot write the model to %s", dir);
    gb_free(&b);
    return;
  }
  const char *asan = "address,undefined -fno-sanitize-recover=undefined";
  CHECK(run_host(&b.a, dir, "oob.o", asan, "") == 0, "-c host under ASan");
  CHECK(run_host(&b.a, dir, "oob.c", asan, "") == 0, "--emit-c host under ASan");
  CHECK(run_host(&b.a, dir, "oob.c", "thread", "TSAN_OPTIONS=halt_on_error=1:exitcode=66") == 0, "--emit-c host under TSan");
  if (!failures) system(arena_printf(&b.a, "rm -rf %s", dir));
  gb_free(&b);
}

#if defined(__SANITIZE_ADDRESS__)
static const bool sanitized = true;
#else
static const bool sanitized = false;
#endif

int main(void) {
  test_jit_instances();
  if (!sanitized) test_static_hosts();
  return tk_exit("test_fault");
}
