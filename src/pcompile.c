/* pcompile.c: the split compile (jit.h, JitPlan) driven in parallel and cached per group.
 *
 * libgccjit serializes its compiles behind one process-wide mutex, so the parallelism
 * is processes: a forked worker per group (largest first, at most `jobs` at a time)
 * compiles it to an object file in a scratch directory; the parent then links them. A group whose key (jit_group_key plus the options and the compiler's
 * identity) has a verified cache entry is not compiled at all, so an edit recompiles
 * the groups it touched and links.
 *
 * A worker that fails or dies fails the compile with a message; the other workers are
 * killed and reaped and the scratch directory removed, so nothing is left behind. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "diag.h"
#include "outfile.h"
#include "pcompile.h"

typedef struct Split {
  Ctx *c;
  const JitPlan *p;
  const JitOpts *o;
  bool object;
  const char *dir;   /* scratch */
  const char **obj;  /* per group: its object file in dir */
  const char **entry;/* per group: its cache entry, NULL: none */
  bool *cached;      /* per group: taken from the cache */
} Split;

/* A scratch directory under $TMPDIR (or /tmp); NULL after printing an error. */
static const char *scratch_dir(Arena *a) {
  const char *t = getenv("TMPDIR");
  char *dir = arena_printf(a, "%s/tdslc-XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(dir)) return dir;
  diag_tool_error("cannot create a scratch directory '%s': %s", dir, strerror(errno));
  return NULL;
}

/* The scratch directory and all in it: objects, link scripts, and what libgccjit left
 * of a worker killed mid-compile (workers keep their temporaries here). */
static void remove_scratch(const Split *s) { remove_tree(s->dir); }

/* A worker: compiles group g, exits 0, or 1 after libgccjit reported an error.
 * TDSLC_TEST_WORKER_ABORT=G (tests only) makes the worker of group G abort. */
static void worker(const Split *s, int g) {
  const char *crash = getenv("TDSLC_TEST_WORKER_ABORT");
  if (crash && atoi(crash) == g) abort();
  setenv("TMPDIR", s->dir, 1);
  _exit(jit_compile_group(&s->c->arena, s->p, s->o, g, s->object, s->obj[g]) ? 0 : 1);
}

static void describe_failure(int st) {
  if (WIFSIGNALED(st))
    diag_tool_error("a compile worker died (signal %d: %s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (WIFEXITED(st) && WEXITSTATUS(st) != 1)
    diag_tool_error("a compile worker failed (exit status %d)", WEXITSTATUS(st));
}

/* Waits for one of pid[0..n) (reaped ones are 0) and zeroes it; false if none is left. */
static bool wait_child(pid_t *pid, int n, int *st) {
  for (;;) {
    pid_t w = waitpid(-1, st, 0);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    for (int k = 0; k < n; k++)
      if (pid[k] == w) {
        pid[k] = 0;
        return true;
      }
  }
}

/* Compiles the groups todo[0..n), each by a fresh worker process, at most jobs at a
 * time. A process per group, not per core: libgccjit keeps some state from one context
 * to the next in a process (a fill became a memset call or not depending on what was
 * compiled before), and the output must not depend on the scheduling. */
static bool run_workers(const Split *s, const int *todo, int n, int jobs) {
  pid_t *pid = ANEWN(&s->c->arena, pid_t, jobs + 1);
  int next = 0, running = 0;
  bool ok = true;
  while ((ok && next < n) || running) {
    int st = 0;
    if (ok && next < n && running < jobs) {
      int k = 0;
      while (pid[k]) k++;
      fflush(NULL);
      pid[k] = fork();
      if (pid[k] == 0) worker(s, todo[next]);
      if (pid[k] > 0) {
        running++, next++;
        continue;
      }
      pid[k] = 0;
      diag_tool_error("cannot start a compile worker: %s", strerror(errno));
      ok = false;
    } else if (!wait_child(pid, jobs, &st)) break;
    else {
      running--;
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
      if (ok) describe_failure(st);
      ok = false;
    }
    for (int k = 0; k < jobs; k++) /* a failure: stop the rest */
      if (pid[k] > 0) kill(pid[k], SIGKILL);
  }
  return ok;
}

/* Fetches each group's verified cache entry; the rest go to todo, largest first (the
 * longest compiles start first). Returns the number in todo; *bad: entries that failed
 * verification (removed, rebuilt). */
static int lookup(Split *s, const char *key_head, int *todo, int *bad) {
  Arena *a = &s->c->arena;
  int n = 0;
  *bad = 0;
  for (int g = 0; g < s->p->ngroups; g++) {
    s->obj[g] = arena_printf(a, "%s/g%d.o", s->dir, g);
    const char *key = key_head ? jit_group_key(a, s->p, s->o, g, s->object) : NULL;
    s->entry[g] = key ? cache_entry(a, arena_printf(a, "%s%s", key_head, key), "o") : NULL;
    CacheResult r = s->entry[g] ? cache_fetch(s->entry[g], s->obj[g]) : CACHE_MISS;
    s->cached[g] = r == CACHE_HIT;
    *bad += r == CACHE_BAD;
    if (s->cached[g]) continue;
    int k = n++;
    for (; k > 0 && s->p->size[todo[k - 1]] < s->p->size[g]; k--) todo[k] = todo[k - 1];
    todo[k] = g;
  }
  return n;
}

static bool compile_and_link(Split *s, const char *key_head, int jobs, const char *out) {
  Ctx *c = s->c;
  int ng = s->p->ngroups;
  int *todo = ANEWN(&c->arena, int, ng + 1);
  int bad;
  int n = lookup(s, key_head, todo, &bad);
  long redo = 0; /* statements of the code groups compiled */
  for (int k = 0; k < n; k++) redo += todo[k] >= JIT_GLUE_GROUPS ? s->p->size[todo[k]] : 0;
  if (c->opt.phase_times)
    fprintf(stderr, "tdslc: %d groups (%ld statements): %d compiled, %d from cache, %d bad entries rebuilt, %d jobs (%ld statements compiled)\n",
            ng, s->p->total, n, ng - n, bad, jobs < n ? jobs : n, redo);
  timing_mark(c, "cache lookup");
  TimingWatch *w = timing_watch(c, arena_printf(&c->arena, "compiling %s (gcc -O%d, %d groups)", c->opt.input, c->opt.opt_level, n));
  bool ok = run_workers(s, todo, n, jobs);
  timing_unwatch(w);
  timing_mark(c, "gcc (compile groups)");
  if (!ok) return false;
  int stored = 0;
  for (int g = 0; g < ng; g++) stored += !s->cached[g] && s->entry[g] && cache_store(s->entry[g], s->obj[g]);
  if (stored) timing_mark(c, "cache store");
  ok = jit_link(&c->arena, s->p, s->o, s->obj, ng, s->object, s->dir, out);
  timing_mark(c, "link");
  return ok;
}

int pcompile(Ctx *c, const IrModule *m, const JitOpts *jo, bool object, const char *key_head, int jobs, const char *out) {
  if (m->dims.len) return PCOMPILE_SERIAL; /* dynamic sizes: storage the groups do not model */
  JitPlan *p = jit_plan(&c->arena, m, jo, jo->native);
  if (p->ngroups < PCOMPILE_MIN_GROUPS || p->total < PCOMPILE_MIN_SIZE) return PCOMPILE_SERIAL;
  timing_mark(c, "code generation (plan)");
  int ng = p->ngroups;
  Split s = {.c = c, .p = p, .o = jo, .object = object, .obj = ANEWN(&c->arena, const char *, ng + 1),
             .entry = ANEWN(&c->arena, const char *, ng + 1), .cached = ANEWN(&c->arena, bool, ng + 1)};
  if (!(s.dir = scratch_dir(&c->arena))) return 2;
  bool ok = compile_and_link(&s, key_head, jobs, out);
  remove_scratch(&s);
  return ok ? 0 : 2; /* reported: not the input's fault */
}
