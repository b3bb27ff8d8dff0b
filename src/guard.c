/* guard.c: cleanup when code generation is stopped (see guard.h). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "outfile.h"

static const int interrupts[] = {SIGINT, SIGTERM, SIGHUP};
enum { N_INTERRUPTS = sizeof interrupts / sizeof interrupts[0] };

/* A handler can read only global state: the process that armed the guard (0: not armed;
 * a forked compile worker keeps its parent's value, so its abort stays a signal its
 * parent reports), the scratch directory, and which interrupts were ignored at start
 * (nohup's SIGHUP stays ignored). The one mutable global of the driver, for that reason. */
static struct {
  volatile sig_atomic_t pid;
  char scratch[4096]; /* "" when none could be made ($TMPDIR is then left as it was) */
  char *old_tmpdir;   /* $TMPDIR before guard_begin (NULL: unset) */
  bool ignored[N_INTERRUPTS];
} guard;

static bool armed_here(void) { return guard.pid && guard.pid == (sig_atomic_t)getpid(); }

/* Async-signal-safe: unlink and system calls only. */
static void clean_up(void) {
  out_unlink_all();
  if (guard.scratch[0]) remove_tree(guard.scratch);
}

static void lib_stopped(void) {
  static const char msg[] = "tdslc: internal error: libgccjit stopped the process (it aborts or exits when memory "
                            "runs out; its own message is above)\n";
  clean_up();
  if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(2);
}

static void on_abort(int sig) {
  if (armed_here()) lib_stopped();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_exit_call(void) {
  if (armed_here()) lib_stopped();
}

/* Interrupted: the files go, then the signal ends the process as it would have. */
static void on_interrupt(int sig) {
  if (armed_here()) clean_up();
  signal(sig, SIG_DFL);
  raise(sig);
}

void guard_rearm(void) {
  for (int i = 0; i < N_INTERRUPTS; i++)
    if (!guard.ignored[i]) signal(interrupts[i], on_interrupt);
}

void guard_install(void) {
  atexit(on_exit_call);
  signal(SIGABRT, on_abort);
  for (int i = 0; i < N_INTERRUPTS; i++) guard.ignored[i] = signal(interrupts[i], SIG_IGN) == SIG_IGN;
  guard_rearm();
}

void guard_begin(void) {
  const char *t = getenv("TMPDIR");
  bool set = t && *t;
  int n = snprintf(guard.scratch, sizeof guard.scratch, "%s/tdslc-XXXXXX", set ? t : "/tmp");
  if (n < 0 || (size_t)n >= sizeof guard.scratch || !mkdtemp(guard.scratch)) guard.scratch[0] = 0;
  else {
    guard.old_tmpdir = set ? strdup(t) : NULL;
    setenv("TMPDIR", guard.scratch, 1);
  }
  guard.pid = (sig_atomic_t)getpid();
}

void guard_end(void) {
  guard.pid = 0;
  if (!guard.scratch[0]) return;
  remove_tree(guard.scratch);
  guard.scratch[0] = 0;
  if (guard.old_tmpdir) setenv("TMPDIR", guard.old_tmpdir, 1);
  else unsetenv("TMPDIR");
  free(guard.old_tmpdir);
  guard.old_tmpdir = NULL;
}
