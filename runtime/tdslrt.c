/* tdslrt.c: the runtime for compiled models. A model exports its functions
 * (NAME_fn_N(instance)) and NAME_model_meta(), a text description of them and of the
 * instance layout; each open model gets its own instance (the tensors and index
 * symbols, 64-byte aligned, at the offsets the metadata gives). This file parses the
 * text and does the rest by name. */
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "tdsl.h"
#include "tdsl_abi.h"
#include "tdslrt_cuda.h"
#include "tdslrt_int.h"

/* The type of a model's `tdsl_parallel` (jit_sched.c): runs fn over [0, n). */
typedef void (*tdsl_par_hook)(void *rt, tdsl_par_fn fn, void *arg, long n);

typedef struct RtBuf {
  char *name;
  tdsl_elem elem;
  long size;
  int rank, nkind[3];
  int *dims;
  char **labels;
  void *data;
  tdsl_role role;
  /* init */
  InitKind init;
  double value;
  double *values;
  long nvalues;
  int stream;
  struct InitStep *prog; /* expr: a postfix program per cell */
  int nprog;
  long long file_elems;
  char *path;
  /* a dynamic buffer (a dim < 0 in the metadata): the runtime allocates data when its
   * dims are set (a dim set to 0 too: one unused cell, so data is never NULL then);
   * dims and size are the current ones (0 while a dim is unset) */
  int *decl;   /* the declared dims (DIM_DYN(id) for a dynamic one); NULL: static */
  void **slot; /* the instance's pointer to data */
} RtBuf;

/* NAME_call(instance, K) for K = first, first + step, ... (n of them). */
typedef struct RtRun {
  int first, step, n;
} RtRun;

typedef struct RtNamed {
  char *name;
  int index;
  void *ptr;
  RtRun *runs; /* a "seq" routine: its runs in turn (kept as runs: linear in the model) */
  int nruns;
  long ncalls; /* all its runs' calls */
  int *parts, nparts; /* a join of dynamic dimensions: the largest of these */
  bool unused;        /* a dimension no tensor, check or index range depends on (dims_used) */
  bool set;           /* a dimension has a value: 0 is a value (an empty axis), so the
                       * instance's int cannot say "not set" (a join: all its parts set) */
} RtNamed;

/* Set while a model is open: a pointer that is not an open model is refused. */
#define MODEL_MAGIC 0x7464736cu

/* Threads (tdsl.h, "Threads"). Every entry point that takes a model enters it: it finds
 * the model in the registry of open models and takes the model's own recursive lock
 * (the runtime's own functions call each other, and checkpoint.c and npy.c go through
 * the public API while tdsl_save/tdsl_load hold it), see enter(). Calls on one model
 * are serialized; calls on different models share nothing but the registry's short
 * critical sections. tdsl_close takes the model out of the registry (later calls are
 * refused as "not an open model"), then waits until it holds the lock with no entry
 * point waiting for it (the calls in flight have left) before it frees. */
struct tdsl_model {
  unsigned magic;
  pthread_mutex_t mu;  /* recursive: taken by every entry point (enter/leave) */
  atomic_int waiting;  /* entry points found the model open and wait for mu */
  unsigned long serial; /* unique per tdsl_open: tells a reused address from the old model */
  bool closing;        /* tdsl_close has begun */
  void *dl;
  tdsl_resolver res;   /* the model's own symbols */
  void *res_h;
  char *prefix;        /* NAME of its symbols */
  unsigned char *inst; /* this model's storage */
  long inst_size;
  void (*call)(void *inst, int k); /* NAME_call */
  int nthreads;        /* for parallel loops (pool.h); the pool starts with the first one */
  tdsl_pool *pool;
  bool parallel;       /* the metadata says the model has parallel loops */
  tdsl_cuda *cuda;     /* a cuda model: device buffers and copies (tdslrt_cuda.c) */
  RtBuf *bufs;
  int nbufs;
  RtNamed *syms, *fns, *aliases;
  int *sym_range;
  int nsyms, nfns, naliases;
  RtNamed *dims;       /* dynamic dimensions: ptr is the int in the instance; the
                        * first nset are set by the host, the joins after them are not */
  int ndims, nset;
  struct RtFlag { int of; int *ptr; } *flags; /* 1 while dim `of` is not 1 (code reads it) */
  int nflags;
  struct RtCheck { int size, expect; bool or_one; char *msg; } *checks; /* before every call */
  int nchecks;
  struct RtHold { void *ptr; long count; bool orphan; } *holds; /* tdsl_hold: storage kept
                        * allocated; orphan: no tensor's any more (freed at the last release) */
  int nholds;
  unsigned pool_fork;   /* fork_count when the pool started: other than now, its workers
                        * are threads of the parent process (pool_drop) */
  uint64_t seed;       /* of the last tdsl_init: what the routine "init" reuses */
  char err[512];       /* the last message of any thread (tdsl_error's fallback) */
};

const char *tdsl_version(void) { return TDSL_VERSION; }

/* ---- errors: per thread and model ----
 * A failing call writes its message into a slot of the calling thread for that model
 * (and into the model's err, the last message of any thread). tdsl_error(m) returns the
 * caller's slot for m: a message another thread writes meanwhile neither changes it nor
 * races with reading it. A thread keeps slots for the last ERR_SLOTS models it failed
 * on; a thread without a slot for m gets a copy of m's last message. Slots are keyed by
 * the model's serial, so a new model at a closed one's address starts without one. */
enum { ERR_SLOTS = 8, ERR_LEN = 512 };
static _Thread_local struct ErrSlot {
  unsigned long serial;
  char msg[ERR_LEN];
} err_slots[ERR_SLOTS];
static _Thread_local unsigned err_next;

/* The calling thread's slot for m; a new one (empty, or with m's last message when
 * inherit) when it has none. */
static char *err_slot(const tdsl_model *m, bool inherit) {
  for (int i = 0; i < ERR_SLOTS; i++)
    if (err_slots[i].serial == m->serial) return err_slots[i].msg;
  struct ErrSlot *s = &err_slots[err_next++ % ERR_SLOTS];
  s->serial = m->serial;
  if (inherit) memcpy(s->msg, m->err, ERR_LEN);
  else s->msg[0] = 0;
  return s->msg;
}

/* Sets the message (the caller holds m's lock, or m is not published yet); -1. */
static int vfail(tdsl_model *m, const char *fmt, va_list ap) {
  char *msg = err_slot(m, false);
  vsnprintf(msg, ERR_LEN, fmt, ap);
  /* Names in messages come from the host and from files (a checkpoint's entry names):
   * control bytes become '?', so that printing a message cannot drive a terminal. */
  for (char *c = msg; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  memcpy(m->err, msg, ERR_LEN);
  return -1;
}

static int fail(tdsl_model *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(m, fmt, ap);
  va_end(ap);
  return -1;
}

/* A message some part wrote into m->err itself (the cuda part's calls take a buffer):
 * the caller's slot gets it too. rc: that part's result; -1 when it failed. */
static int adopt_err(tdsl_model *m, int rc) {
  if (!rc) return 0;
  memcpy(err_slot(m, false), m->err, ERR_LEN);
  return -1;
}

/* The open models. A pointer is looked up here before it is dereferenced, so a closed
 * model (tdsl_close twice, tdsl_error after it) or a garbage pointer is refused without
 * reading freed or foreign memory. Every call looks its model up: besides the list, a
 * hash set of the pointers (linear probing, at most a quarter full, rebuilt when the
 * list changes: opening is rare, calls are not), so that a host with thousands of open
 * models does not pay a scan per call. NULL hash (out of memory): the list is scanned. */
static struct {
  pthread_mutex_t mu;
  const tdsl_model **open;
  int n, cap;
  const tdsl_model **hash;
  size_t hmask;
  unsigned long serials;
} registry = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL, 0, 0};

static size_t ptr_slot(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  return (size_t)(x ^ x >> 32);
}

/* Rebuilds the hash set from the list (registry lock held). */
static void reg_rehash(void) {
  free(registry.hash);
  registry.hash = NULL;
  size_t cap = 16;
  while (cap < 4 * (size_t)registry.n) cap *= 2;
  if (!registry.n || !(registry.hash = calloc(cap, sizeof *registry.hash))) return;
  registry.hmask = cap - 1;
  for (int i = 0; i < registry.n; i++) {
    size_t k = ptr_slot(registry.open[i]) & registry.hmask;
    while (registry.hash[k]) k = (k + 1) & registry.hmask;
    registry.hash[k] = registry.open[i];
  }
}

/* Whether m is open (registry lock held). */
static bool reg_has(const tdsl_model *m) {
  if (!registry.hash) {
    for (int i = registry.n - 1; i >= 0; i--)
      if (registry.open[i] == m) return true;
    return false;
  }
  for (size_t k = ptr_slot(m) & registry.hmask; registry.hash[k]; k = (k + 1) & registry.hmask)
    if (registry.hash[k] == m) return true;
  return false;
}

/* The model's lock: recursive, since entry points call entry points. */
static void model_lock_init(tdsl_model *m) {
  pthread_mutexattr_t at;
  pthread_mutexattr_init(&at);
  pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&m->mu, &at);
  pthread_mutexattr_destroy(&at);
}

/* Bumped in the child of every fork: a thread pool started before it has no threads
 * in the child (pool_drop). */
static atomic_uint fork_count;

/* fork(). Only the forking thread exists in the child: a lock another thread held at the
 * fork would stay locked there forever, and a model it was changing would be half
 * changed. So, as glibc does for malloc, the fork waits until no call runs on any open
 * model: the handler takes every model's lock (counted in `waiting` meanwhile, so none
 * is freed), then the registry's, and releases them on both sides. The child also
 * forgets the threads it has not got: those waiting for a lock (`waiting`), and pools'
 * workers (pool_drop). */
static struct {
  tdsl_model **m;
  int n;
} forking;

static void fork_prepare(void) {
  pthread_mutex_lock(&registry.mu);
  forking.n = 0;
  forking.m = registry.n ? malloc(sizeof *forking.m * (size_t)registry.n) : NULL;
  for (int i = 0; forking.m && i < registry.n; i++) {
    forking.m[forking.n++] = (tdsl_model *)registry.open[i];
    atomic_fetch_add(&forking.m[i]->waiting, 1); /* as enter(): tdsl_close waits */
  }
  pthread_mutex_unlock(&registry.mu);
  /* no call takes a second model's lock while it holds one: no cycle with this order */
  for (int i = 0; i < forking.n; i++) {
    pthread_mutex_lock(&forking.m[i]->mu);
    atomic_fetch_sub(&forking.m[i]->waiting, 1);
  }
  pthread_mutex_lock(&registry.mu);
}

/* The child makes its locks anew: a recursive mutex's owner is the parent's thread id,
 * so the child's unlock would be refused. */
static void fork_release(bool child) {
  if (!child)
    for (int i = 0; i < forking.n; i++) pthread_mutex_unlock(&forking.m[i]->mu);
  if (child) {
    atomic_fetch_add(&fork_count, 1);
    for (int i = 0; i < registry.n; i++) {
      tdsl_model *m = (tdsl_model *)registry.open[i];
      model_lock_init(m);
      atomic_store(&m->waiting, 0);
    }
  }
  free(forking.m);
  forking.m = NULL;
  forking.n = 0;
  if (child) pthread_mutex_init(&registry.mu, NULL);
  else pthread_mutex_unlock(&registry.mu);
}

static void fork_parent(void) { fork_release(false); }
static void fork_child(void) { fork_release(true); }
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_register(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

static bool reg_add(tdsl_model *m) {
  pthread_once(&fork_once, fork_register);
  pthread_mutex_lock(&registry.mu);
  bool ok = true;
  if (registry.n == registry.cap) {
    int cap = registry.cap ? 2 * registry.cap : 16;
    const tdsl_model **grown = realloc(registry.open, sizeof *grown * (size_t)cap);
    if (grown) registry.open = grown, registry.cap = cap;
    else ok = false;
  }
  if (ok) {
    registry.open[registry.n++] = m;
    m->serial = ++registry.serials;
    reg_rehash();
  }
  pthread_mutex_unlock(&registry.mu);
  return ok;
}

/* Removes m; false when it was not open (or another tdsl_close got it first). The last
 * close frees the list (no leak for leak checkers of programs that close their models). */
static bool reg_remove(const tdsl_model *m) {
  pthread_mutex_lock(&registry.mu);
  bool found = false;
  for (int i = 0; i < registry.n && !found; i++)
    if (registry.open[i] == m) {
      registry.open[i] = registry.open[--registry.n];
      found = true;
    }
  if (found) reg_rehash();
  if (!registry.n) {
    free(registry.open);
    registry.open = NULL;
    registry.cap = 0;
  }
  pthread_mutex_unlock(&registry.mu);
  return found;
}

/* Enters model cm for one call: false when it is not an open model. On true the caller
 * holds its lock and must leave(). The lock is tried while the registry's is held, so
 * the model cannot be freed in between; only when another thread holds it does the
 * caller count itself in `waiting` (tdsl_close waits for those) and block. The common
 * case costs the registry's lock and the model's, nothing more. */
static bool enter(const tdsl_model *cm) {
  tdsl_model *m = (tdsl_model *)cm; /* the lock is not the model's value */
  if (!m) return false;
  pthread_mutex_lock(&registry.mu);
  if (!reg_has(m)) {
    pthread_mutex_unlock(&registry.mu);
    return false;
  }
  if (pthread_mutex_trylock(&m->mu) == 0) {
    pthread_mutex_unlock(&registry.mu);
    return true;
  }
  atomic_fetch_add_explicit(&m->waiting, 1, memory_order_relaxed);
  pthread_mutex_unlock(&registry.mu);
  pthread_mutex_lock(&m->mu);
  atomic_fetch_sub_explicit(&m->waiting, 1, memory_order_relaxed);
  return true;
}

static void leave(const tdsl_model *cm) { pthread_mutex_unlock(&((tdsl_model *)cm)->mu); }

const char *tdsl_error(const tdsl_model *m) {
  if (!m) return "no model (NULL)";
  if (!enter(m)) return "not an open model";
  const char *msg = err_slot(m, true);
  leave(m);
  return msg;
}

/* The checks every function makes of its arguments. */
static int need(tdsl_model *m, const char *fn, const char *what, const void *p) {
  return p ? 0 : fail(m, "%s: NULL %s", fn, what);
}

static int need_data(tdsl_model *m, const char *fn, const void *p, long n) {
  if (n < 0) return fail(m, "%s: negative element count %ld", fn, n);
  return p || n == 0 ? 0 : fail(m, "%s: NULL data pointer", fn);
}

int tdsl_rt_enter(tdsl_model *m, const char *fn, const char *what, const void *p) {
  if (!enter(m)) return -1;
  if (!need(m, fn, what, p)) return 0;
  leave(m);
  return -1;
}

void tdsl_rt_leave(tdsl_model *m) { leave(m); }

int tdsl_rt_fail(tdsl_model *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(m, fmt, ap);
  va_end(ap);
  return -1;
}
static const char *const role_names[] = {"intermediate", "param", "grad", "optimizer", "input", "const"};

const char *tdsl_role_name(tdsl_role r) {
  return (unsigned)r < sizeof role_names / sizeof *role_names ? role_names[r] : "unknown";
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

/* Whether p, a symbol the resolver found, is known to be something other than code (a
 * variable named like a model's function: calling it would jump into data). Only what
 * the dynamic linker knows is checked; code it does not know (tdslc --run's) passes. */
static bool not_code(const void *p) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!p || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || info.dli_saddr != p) return false;
  int type = ELF64_ST_TYPE(sym->st_info);
  return type != STT_FUNC && type != STT_GNU_IFUNC;
}

/* ---- metadata ---- */

static char *next_tok(char **p) {
  char *s = *p;
  while (*s == ' ') s++;
  if (!*s) return NULL;
  char *e = s;
  while (*e && *e != ' ') e++;
  if (*e) *e++ = 0;
  *p = e;
  return s;
}

/* The metadata is a trust boundary: a model file may be damaged or hostile. Every
 * number is parsed strictly and range-checked, every count checked against what
 * follows, every string decoded; a malformed model is refused with a message. */

static long tok_long(char **p) {
  char *t = next_tok(p);
  return t ? strtol(t, NULL, 10) : 0;
}

static bool tok_int(char **p, long lo, long hi, long *out) {
  char *t = next_tok(p), *end;
  if (!t) return false;
  errno = 0;
  long v = strtol(t, &end, 10);
  if (errno || end == t || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool tok_double(char **p, double *out) {
  char *t = next_tok(p), *end;
  if (!t) return false;
  *out = strtod(t, &end);
  return end != t && !*end;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A string token: ir_metadata writes '%', space, control and non-ASCII bytes as %XX
 * (so a name or label can never split a token or a line). Decoded in place; a %00
 * ends the string; NULL when missing or malformed. */
static char *tok_str(char **p) {
  char *t = next_tok(p);
  if (!t) return NULL;
  char *w = t;
  for (char *r = t; *r; r++) {
    if (*r != '%') { *w++ = *r; continue; }
    int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);
    if (lo < 0) return NULL;
    *w++ = (char)(hi * 16 + lo);
    r += 2;
  }
  *w = 0;
  return t;
}

static int count_fields(const char *p) {
  int n = 0;
  for (;;) {
    while (*p == ' ') p++;
    if (!*p) return n;
    n++;
    while (*p && *p != ' ') p++;
  }
}

static void *grow(void *arr, int n, size_t elsz) {
  /* Capacity doubles at powers of two. */
  if (n && (n & (n - 1))) return arr;
  return realloc(arr, elsz * (size_t)(n ? 2 * n : 1));
}

/* The instance starts with a header (tdsl_abi.h INST_HEADER): the runtime's slots (0 and
 * 1: a cuda model's context and launch function), then the --check-bounds fault. */

/* The fault word of the instance: models built with --check-bounds set it (and the
 * message after it) when a check fails and return instead of aborting. */
static int *inst_fault(const tdsl_model *m) { return (int *)(void *)(m->inst + INST_FAULT); }

static long buf_bytes(const RtBuf *b) { return (b->size > 0 ? b->size : 1) * (b->elem == TDSL_F64 ? 8 : 4); }

/* [off, off + n) lies in the instance after its header, and off is aligned for n <= 8. */
static bool in_instance(const tdsl_model *m, long off, long n) {
  return m->inst && off >= INST_HEADER && n >= 0 && off <= m->inst_size - n && off % 4 == 0;
}

/* seq ID NAME K|A-B|A-B/S...: a routine that runs NAME_call(instance, K) for each K. */
static int meta_seq(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  RtNamed nd = {0};
  nd.index = (int)tok_long(&p);
  char *name = next_tok(&p), *t, sym[320];
  if (!m->call) {
    snprintf(sym, sizeof sym, "%s_call", m->prefix ? m->prefix : "tdsl");
    void *f = res(h, sym);
    if (!f) return fail(m, "model has no symbol %s", sym);
    if (not_code(f)) return fail(m, "model symbol %s is not a function", sym);
    memcpy(&m->call, &f, sizeof f);
  }
  m->fns = grow(m->fns, m->nfns, sizeof nd);
  if (!m->fns) return fail(m, "out of memory");
  m->fns[m->nfns++] = nd;
  RtNamed *r = &m->fns[m->nfns - 1];
  if (!(r->name = xstrdup(name ? name : "?"))) return fail(m, "out of memory");
  while ((t = next_tok(&p))) {
    /* K, A-B or A-B/S: A, A+S, ..., B */
    char *end;
    long a = strtol(t, &end, 10), b = a, st = 1;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    if (*end == '/') st = strtol(end + 1, &end, 10);
    /* function numbers and steps are small: nothing below can overflow */
    if (a < 0 || b < 0 || a > (1 << 22) || b > (1 << 22) || st < -(1 << 22) || st > (1 << 22))
      return fail(m, "malformed model metadata: seq %s", r->name);
    long n = st ? (b - a) / st + 1 : 0;
    if (*end || a < 0 || b < 0 || n < 1 || (b - a) % st || n > (1 << 22) - r->ncalls)
      return fail(m, "malformed model metadata: seq %s", r->name);
    r->runs = grow(r->runs, r->nruns, sizeof(RtRun));
    if (!r->runs) return fail(m, "out of memory");
    r->runs[r->nruns++] = (RtRun){(int)a, (int)st, (int)n};
    r->ncalls += n;
  }
  return 0;
}

/* Runs seq routine r's calls in turn; stops after one that faulted. */
static void run_seq(tdsl_model *m, const RtNamed *r) {
  for (int k = 0; k < r->nruns; k++)
    for (int i = 0, f = r->runs[k].first; i < r->runs[k].n; i++, f += r->runs[k].step) {
      if (*inst_fault(m)) return;
      m->call(m->inst, f);
    }
}

/* ---- init programs (`init ID expr STREAM NOPS OP...`, src/ir_print.c) ---- */

/* Every primitive of the compiler (src/ops.h): an initializer may use any of them. */
typedef enum StepKind {
  S_CONST, S_RANGE, S_VALUES, S_UNIFORM, S_NORMAL,
  S_NEG, S_EXP, S_LOG, S_SQRT, S_SIN, S_COS, S_TANH, S_RELU, S_RECIP, S_ID, /* unary */
  S_SAT01, S_EXP2, S_LOG2, S_RECIP_SQRT, S_NOT, S_ERF,
  S_ADD, S_SUB, S_MUL, S_DIV, S_POW, S_MAX, S_MIN,                          /* binary */
  S_FST, S_SND, S_RELU_GATE, S_SAT01_GATE, S_LT, S_EQ, S_NE, S_OR, S_AND, S_MOD,
  S_WHERE, S_FMA,                                                           /* ternary */
} StepKind;

typedef struct InitStep {
  StepKind kind;
  double value;
  double *values;
  long nvalues;
} InitStep;

enum { MAX_PROG = 1 << 16, MAX_STACK = 64 };

/* Names as the compiler's primitives (src/ops.c), in StepKind order from S_NEG. */
static const char *const step_names[] = {
    "neg",  "exp", "log",       "sqrt",       "sin", "cos", "tanh", "relu", "recip", "id",   "sat01",
    "exp2", "log2", "recip_sqrt", "not",      "erf", "add", "sub", "mul",  "div",  "pow",   "max",  "min",
    "fst",  "snd", "relu_gate", "sat01_gate", "lt",  "eq",  "ne",   "or_",  "and_",  "mod_", "where",
    "fma"};

static int step_arity(StepKind k) { return k < S_NEG ? 0 : k < S_ADD ? 1 : k < S_WHERE ? 2 : 3; }

/* Reads NOPS steps; every value is checked, and the stack must end with one value. */
static int parse_prog(RtBuf *b, char **p) {
  char *end;
  long n = tok_long(p);
  if (n <= 0 || n > MAX_PROG || !(b->prog = calloc((size_t)n, sizeof(InitStep)))) return -1;
  int depth = 0;
  for (long i = 0; i < n; i++) {
    InitStep *st = &b->prog[b->nprog++]; /* counted at once: tdsl_close frees its values */
    char *w = next_tok(p);
    if (!w) return -1;
    if (!strcmp(w, "const") || !strcmp(w, "values")) {
      st->kind = w[0] == 'c' ? S_CONST : S_VALUES;
      long nv = st->kind == S_CONST ? 1 : tok_long(p);
      /* no more values than the line has characters: a count alone must not allocate */
      if (nv <= 0 || nv > (long)strlen(*p) || !(st->values = calloc((size_t)nv, sizeof(double)))) return -1;
      st->nvalues = nv;
      for (long k = 0; k < nv; k++) {
        char *t = next_tok(p);
        if (!t) return -1;
        st->values[k] = strtod(t, &end);
        if (*end) return -1;
      }
      st->value = st->values[0];
    } else if (!strcmp(w, "range")) st->kind = S_RANGE;
    else if (!strcmp(w, "uniform")) st->kind = S_UNIFORM;
    else if (!strcmp(w, "normal")) st->kind = S_NORMAL;
    else {
      size_t k = 0;
      while (k < sizeof step_names / sizeof *step_names && strcmp(w, step_names[k])) k++;
      if (k == sizeof step_names / sizeof *step_names) return -1;
      st->kind = (StepKind)(S_NEG + k);
    }
    depth += 1 - step_arity(st->kind);
    if (depth < 1 || depth > MAX_STACK) return -1;
  }
  return depth == 1 && !next_tok(p) ? 0 : -1;
}

enum { META_MAX_RANK = 1024 };

static int bad_meta(tdsl_model *m, int line, const char *what) {
  return fail(m, "malformed model metadata (line %d): %s", line, what);
}

static int meta_labels(tdsl_model *m, RtBuf *b, char **p, int ln);

/* dims of b from the line: their product must be the size. A dim -1 - ID is dynamic
 * dimension ID (a dim line before): b is then allocated when its dims are set, and
 * its size in the line is 0. */
static int meta_dims(tdsl_model *m, RtBuf *b, char **p, int ln) {
  long prod = 1, d;
  for (int k = 0; k < b->rank; k++) {
    if (!tok_int(p, -(long)m->ndims, INT_MAX, &d)) return bad_meta(m, ln, "bad dimension");
    if (d < 0 && !b->decl) {
      if (!(b->decl = calloc((size_t)b->rank, sizeof(int)))) return fail(m, "out of memory");
      memcpy(b->decl, b->dims, sizeof(int) * (size_t)k);
    }
    if (b->decl) b->decl[k] = (int)d;
    b->dims[k] = d < 0 ? 0 : (int)d;
    if (d < 0) continue; /* known when the dimension is set */
    prod = d == 0 || prod == 0 ? 0 : prod > LONG_MAX / d ? -1 : prod * d;
    if (prod < 0) return bad_meta(m, ln, "dimensions overflow");
  }
  if (b->decl && b->size != 0) return bad_meta(m, ln, "a dynamic buffer's size is not 0");
  if (!b->decl && prod != b->size && !(prod == 0 && b->size <= 1)) return bad_meta(m, ln, "size is not the product of the dimensions");
  return meta_labels(m, b, p, ln);
}

/* The labels of b from the line. */
static int meta_labels(tdsl_model *m, RtBuf *b, char **p, int ln) {
  for (int k = 0; k < b->rank; k++) {
    char *raw = *p, *l;
    while (*raw == ' ') raw++;
    bool none = raw[0] == '-' && (raw[1] == ' ' || !raw[1]);
    if (!(l = tok_str(p))) return bad_meta(m, ln, "bad label");
    if (!none && !(b->labels[k] = xstrdup(l))) return fail(m, "out of memory");
  }
  return 0;
}

/* buf ID NAME f32|f64 SIZE NB NO NI DIM... LABEL... */
static int meta_buf(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long id, size, nk[3];
  char *name, *el;
  if (!tok_int(&p, 0, INT_MAX, &id) || id != m->nbufs) return bad_meta(m, ln, "buffers out of order");
  if (!(name = tok_str(&p)) || !(el = next_tok(&p)) || (strcmp(el, "f32") && strcmp(el, "f64")))
    return bad_meta(m, ln, "bad buffer name or element type");
  if (!tok_int(&p, 0, LONG_MAX / 8, &size)) return bad_meta(m, ln, "bad buffer size");
  for (int k = 0; k < 3; k++)
    if (!tok_int(&p, 0, META_MAX_RANK, &nk[k])) return bad_meta(m, ln, "bad axis count");
  if (nk[0] + nk[1] + nk[2] > META_MAX_RANK) return bad_meta(m, ln, "too many axes");
  RtBuf *bufs = grow(m->bufs, m->nbufs, sizeof(RtBuf));
  if (!bufs) return fail(m, "out of memory");
  m->bufs = bufs;
  RtBuf *b = &m->bufs[m->nbufs++];
  memset(b, 0, sizeof *b);
  b->elem = el[1] == '6' ? TDSL_F64 : TDSL_F32;
  b->size = size;
  for (int k = 0; k < 3; k++) b->nkind[k] = (int)nk[k];
  b->rank = (int)(nk[0] + nk[1] + nk[2]);
  b->name = xstrdup(name);
  b->dims = calloc((size_t)b->rank + 1, sizeof(int));
  b->labels = calloc((size_t)b->rank + 1, sizeof(char *));
  if (!b->name || !b->dims || !b->labels) {
    b->rank = 0; /* tdsl_close frees rank labels */
    return fail(m, "out of memory");
  }
  return meta_dims(m, b, &p, ln);
}

/* Tensor storage, 64-byte aligned; from HUGE_MIN bytes on, 2 MiB aligned and advised
 * onto transparent huge pages, as numpy advises its own large arrays (THP in "madvise"
 * mode gives nothing unasked). Measured on a Zen 4 (same-run A/B, 7 rounds): a row or
 * full sum over 4096^2 floats 1.2-1.7x faster (the VM has no counters to say whether
 * page walks or prefetchers stopping at 4 KiB boundaries); permutes unchanged. The
 * advice may fail or be ignored: harmless. */
enum { HUGE_PAGE = 2 << 20, HUGE_MIN = 4 << 20 };

static void *storage_alloc(size_t bytes) {
  size_t align = bytes >= HUGE_MIN ? HUGE_PAGE : 64, n = (bytes + align - 1) / align * align;
  void *p = n >= bytes ? aligned_alloc(align, n) : NULL;
#ifdef MADV_HUGEPAGE
  if (p && align == HUGE_PAGE) madvise(p, n, MADV_HUGEPAGE);
#endif
  return p;
}

/* model NAME SIZE: the symbol prefix and the instance's bytes; allocates the instance. */
static int meta_model(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  char *name = tok_str(&p);
  long size;
  if (!name || m->prefix || !tok_int(&p, INST_HEADER, LONG_MAX, &size) || size % 64) return bad_meta(m, ln, "bad model line");
  for (const char *c = name; *c; c++)
    if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
      return bad_meta(m, ln, "model name is not a C identifier");
  m->inst_size = size;
  if (!(m->prefix = xstrdup(name)) || !(m->inst = storage_alloc((size_t)size))) return fail(m, "out of memory");
  memset(m->inst, 0, (size_t)size);
  return 0;
}

/* at ID OFFSET: buffer ID's storage in the instance. */
static int meta_at(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long id, off;
  if (!m->nbufs || !tok_int(&p, 0, m->nbufs - 1, &id) || !tok_int(&p, 0, LONG_MAX, &off)) return bad_meta(m, ln, "bad at line");
  RtBuf *b = &m->bufs[id];
  if (b->decl) { /* a pointer to storage the runtime allocates */
    if (b->slot || !in_instance(m, off, 8) || off % 8) return bad_meta(m, ln, "buffer storage outside the instance");
    b->slot = (void **)(m->inst + off);
    return 0;
  }
  if (b->data || !in_instance(m, off, buf_bytes(b))) return bad_meta(m, ln, "buffer storage outside the instance");
  if (off % (b->elem == TDSL_F64 ? 8 : 4)) return bad_meta(m, ln, "buffer storage misaligned for its element type");
  b->data = m->inst + off;
  return 0;
}

/* flag ID OF OFFSET: an int the runtime sets to (dim OF != 1); flags follow the dims. */
static int meta_flag(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long id, of, off;
  if (!tok_int(&p, 0, INT_MAX, &id) || id != m->ndims + m->nflags) return bad_meta(m, ln, "flags out of order");
  if (!m->ndims || !tok_int(&p, 0, m->ndims - 1, &of) || !tok_int(&p, 0, LONG_MAX, &off) || next_tok(&p))
    return bad_meta(m, ln, "bad flag line");
  if (!in_instance(m, off, 4)) return bad_meta(m, ln, "flag outside the instance");
  struct RtFlag *grown = grow(m->flags, m->nflags, sizeof *grown);
  if (!grown) return fail(m, "out of memory");
  m->flags = grown;
  m->flags[m->nflags++] = (struct RtFlag){(int)of, (int *)(m->inst + off)};
  return 0;
}

/* check SIZE EXPECT ORONE MSG: a run-time check of dynamic sizes before every call. */
static int meta_check(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long size, expect, or_one;
  char *msg;
  if (!tok_int(&p, -(long)m->ndims, INT_MAX, &size) || !tok_int(&p, -(long)m->ndims, INT_MAX, &expect) ||
      !tok_int(&p, 0, 1, &or_one) || !(msg = tok_str(&p)) || next_tok(&p))
    return bad_meta(m, ln, "bad check line");
  struct RtCheck *grown = grow(m->checks, m->nchecks, sizeof *grown);
  if (!grown) return fail(m, "out of memory");
  m->checks = grown;
  struct RtCheck *c = &m->checks[m->nchecks];
  *c = (struct RtCheck){(int)size, (int)expect, or_one != 0, xstrdup(msg)};
  if (!c->msg) return fail(m, "out of memory");
  m->nchecks++;
  return 0;
}

/* The fields common to dim and join lines: ID NAME OFFSET, in order (dims before joins,
 * both before buffers and flags). NULL after reporting. */
static RtNamed *meta_dim_head(tdsl_model *m, char **p, int ln, bool join) {
  long id, off;
  char *name;
  if (m->nbufs || m->nflags || (!join && m->nset != m->ndims) || !tok_int(p, 0, INT_MAX, &id) || id != m->ndims) {
    bad_meta(m, ln, "dimensions out of order");
    return NULL;
  }
  if (!(name = tok_str(p)) || !*name || !tok_int(p, 0, LONG_MAX, &off)) {
    bad_meta(m, ln, join ? "bad join line" : "bad dim line");
    return NULL;
  }
  if (!in_instance(m, off, 4)) {
    bad_meta(m, ln, "dimension outside the instance");
    return NULL;
  }
  for (int i = 0; i < m->ndims; i++)
    if (!strcmp(m->dims[i].name, name)) {
      bad_meta(m, ln, "two dimensions of one name");
      return NULL;
    }
  RtNamed *grown = grow(m->dims, m->ndims, sizeof(RtNamed));
  if (!grown) {
    fail(m, "out of memory");
    return NULL;
  }
  m->dims = grown;
  RtNamed *d = &m->dims[m->ndims];
  memset(d, 0, sizeof *d);
  if (!(d->name = xstrdup(name))) {
    fail(m, "out of memory");
    return NULL;
  }
  d->index = (int)id;
  d->ptr = m->inst + off;
  m->ndims++;
  return d;
}

/* dim ID NAME OFFSET: a dynamic dimension, before every buffer; its value (an int in
 * the instance) stays 0 until tdsl_set_dim. */
static int meta_dim(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  if (!meta_dim_head(m, &p, ln, false)) return -1;
  m->nset++;
  return next_tok(&p) ? bad_meta(m, ln, "bad dim line") : 0;
}

/* join ID NAME OFFSET DIM...: the largest of these (two or more, increasing) dims,
 * which the runtime keeps up to date; after the dims. */
static int meta_join(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  RtNamed *d = meta_dim_head(m, &p, ln, true);
  if (!d) return -1;
  int n = count_fields(p);
  if (n < 2 || n > m->nset) return bad_meta(m, ln, "bad join line");
  if (!(d->parts = calloc((size_t)n, sizeof(int)))) return fail(m, "out of memory");
  for (long k = 0, v; k < n; k++) {
    if (!tok_int(&p, k ? d->parts[k - 1] + 1 : 0, m->nset - 1, &v)) return bad_meta(m, ln, "bad join line");
    d->parts[d->nparts++] = (int)v;
  }
  return 0;
}

/* init ID const V | values N V... | range | uniform STREAM | file ELEMS PATH */
static int meta_init(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long id, n;
  char *k = NULL;
  if (!m->nbufs || !tok_int(&p, 0, m->nbufs - 1, &id) || !(k = next_tok(&p))) return bad_meta(m, ln, "bad init line");
  RtBuf *b = &m->bufs[id];
  if (b->init || b->prog) return bad_meta(m, ln, "a second init line for one buffer");
  if (!strcmp(k, "const")) {
    if (!tok_double(&p, &b->value)) return bad_meta(m, ln, "bad constant");
    b->init = INIT_CONST;
  } else if (!strcmp(k, "values")) {
    if (!tok_int(&p, 0, (long)strlen(p), &n)) return bad_meta(m, ln, "bad value count");
    if (!(b->values = calloc((size_t)n + 1, sizeof(double)))) return fail(m, "out of memory");
    for (long i = 0; i < n; i++)
      if (!tok_double(&p, &b->values[i])) return bad_meta(m, ln, "fewer values than announced");
    b->nvalues = n;
    b->init = INIT_VALUES;
  } else if (!strcmp(k, "expr")) {
    if (!tok_int(&p, 0, INT_MAX, &n)) return bad_meta(m, ln, "bad random stream");
    b->stream = (int)n;
    if (parse_prog(b, &p)) return fail(m, "tensor %s: invalid init program in the model metadata", b->name);
    b->init = INIT_EXPR;
  } else if (!strcmp(k, "range")) b->init = INIT_RANGE;
  else if (!strcmp(k, "uniform")) {
    if (!tok_int(&p, 0, INT_MAX, &n)) return bad_meta(m, ln, "bad random stream");
    b->stream = (int)n;
    b->init = INIT_UNIFORM;
  } else if (!strcmp(k, "file")) {
    char *path;
    if (!tok_int(&p, 0, LONG_MAX, &n) || !(path = tok_str(&p))) return bad_meta(m, ln, "bad file init");
    b->file_elems = n;
    if (!(b->path = xstrdup(path))) return fail(m, "out of memory");
    b->init = INIT_FILE;
  } else return bad_meta(m, ln, "unknown init kind");
  return 0;
}

/* role ID NAME */
static int meta_role(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long id;
  char *r;
  if (!m->nbufs || !tok_int(&p, 0, m->nbufs - 1, &id) || !(r = next_tok(&p))) return bad_meta(m, ln, "bad role line");
  for (int k = 0; k < (int)(sizeof role_names / sizeof *role_names); k++)
    if (!strcmp(r, role_names[k])) {
      m->bufs[id].role = (tdsl_role)k;
      return 0;
    }
  return bad_meta(m, ln, "unknown role");
}

/* Appends nd to *arr, *cnt its length; frees nd's name on failure. */
static int add_named(tdsl_model *m, RtNamed **arr, int *cnt, RtNamed nd) {
  RtNamed *grown = grow(*arr, *cnt, sizeof nd);
  if (!grown) {
    free(nd.name);
    return fail(m, "out of memory");
  }
  *arr = grown;
  (*arr)[(*cnt)++] = nd;
  return 0;
}

/* sym ID NAME RANGE OFFSET: index symbol ID (values below RANGE; RANGE < 0: below the value
 * of dim -1 - RANGE) at OFFSET in the instance. */
static int meta_sym(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long idx, range, off;
  char *name;
  if (!tok_int(&p, 0, INT_MAX, &idx) || !(name = tok_str(&p)) || !tok_int(&p, -(long)m->ndims, INT_MAX, &range) ||
      !tok_int(&p, 0, LONG_MAX, &off))
    return bad_meta(m, ln, "bad index symbol line");
  if (idx != m->nsyms) return bad_meta(m, ln, "index symbols out of order");
  if (!in_instance(m, off, 4)) return bad_meta(m, ln, "index symbol outside the instance");
  int *ranges = grow(m->sym_range, m->nsyms, sizeof(int));
  if (!ranges) return fail(m, "out of memory");
  m->sym_range = ranges;
  m->sym_range[m->nsyms] = (int)range;
  RtNamed nd = {.index = (int)idx, .name = xstrdup(name), .ptr = m->inst + off};
  if (!nd.name) return fail(m, "out of memory");
  return add_named(m, &m->syms, &m->nsyms, nd);
}

/* fn ID NAME: an exported routine, the model's symbol PREFIX_fn_ID. */
static int meta_fn(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long idx;
  char *name, symname[320];
  if (!tok_int(&p, 0, INT_MAX, &idx) || !(name = tok_str(&p))) return bad_meta(m, ln, "bad routine line");
  snprintf(symname, sizeof symname, "%s_fn_%ld", m->prefix ? m->prefix : "tdsl", idx);
  RtNamed nd = {.index = (int)idx, .name = xstrdup(name), .ptr = res(h, symname)};
  if (!nd.name) return fail(m, "out of memory");
  if (add_named(m, &m->fns, &m->nfns, nd)) return -1;
  if (not_code(nd.ptr)) return fail(m, "model symbol %s (%s) is not a function", symname, nd.name);
  return nd.ptr ? 0 : fail(m, "model has no symbol %s (%s)", symname, nd.name);
}

/* alias NAME BUFID: another name of buffer BUFID. */
static int meta_alias(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  long idx;
  char *name;
  if (!(name = tok_str(&p)) || !m->nbufs || !tok_int(&p, 0, m->nbufs - 1, &idx)) return bad_meta(m, ln, "bad alias line");
  RtNamed nd = {.index = (int)idx, .name = xstrdup(name)};
  if (!nd.name) return fail(m, "out of memory");
  return add_named(m, &m->aliases, &m->naliases, nd);
}

/* tdsl VERSION: tdsl_open_resolved checked the version; it is the first line only. */
static int meta_version(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  return ln == 1 ? 0 : bad_meta(m, ln, "a second version line");
}

/* threads: the model runs parallel loops through the runtime's thread pool. */
static int meta_threads(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  m->parallel = true;
  return 0;
}

/* cuda: a cuda model; tdsl_open_resolved hands it to tdslrt_cuda.c, which reads the
 * kernel table from its own symbols. */
static int meta_cuda(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) { return 0; }

typedef int (*MetaFn)(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h);

/* The metadata's line kinds, as ir_metadata (src/ir_print.c) writes them: a line is
 * KEYWORD FIELD..., and a keyword with a fixed number of fields (-1: the handler
 * reads a variable number) is refused with `bad` when it has another. */
static const struct MetaKind {
  const char *kw;
  MetaFn fn;
  int fields;
  const char *bad;
} meta_kinds[] = {
    {"tdsl", meta_version, 1, "bad version line"},
    {"model", meta_model, 2, "bad model line"},
    {"buf", meta_buf, -1, NULL},
    {"at", meta_at, 2, "bad at line"},
    {"dim", meta_dim, 3, "bad dim line"},
    {"join", meta_join, -1, NULL},
    {"flag", meta_flag, 3, "bad flag line"},
    {"check", meta_check, 4, "bad check line"},
    {"role", meta_role, 2, "bad role line"},
    {"init", meta_init, -1, NULL},
    {"sym", meta_sym, 4, "bad index symbol line"},
    {"alias", meta_alias, 2, "bad alias line"},
    {"fn", meta_fn, 2, "bad routine line"},
    {"seq", meta_seq, -1, NULL},
    {"threads", meta_threads, 0, "bad threads line"},
    {"cuda", meta_cuda, 0, "bad cuda line"},
};

/* An unknown keyword is refused (a model from a newer tdslc, or damaged), named with
 * its non-printable bytes as '?': the message may reach a terminal. */
static int unknown_keyword(tdsl_model *m, const char *kw, int ln) {
  char shown[41];
  size_t n = 0;
  for (; kw[n] && n < sizeof shown - 1; n++) shown[n] = kw[n] > ' ' && kw[n] < 0x7f ? kw[n] : '?';
  shown[n] = 0;
  return fail(m, "malformed model metadata (line %d): unknown keyword '%s'", ln, shown);
}

static int meta_line(tdsl_model *m, char *p, int ln, tdsl_resolver res, void *h) {
  char *kw = next_tok(&p);
  if (!kw) return 0; /* a blank line */
  for (size_t i = 0; i < sizeof meta_kinds / sizeof *meta_kinds; i++) {
    const struct MetaKind *k = &meta_kinds[i];
    if (strcmp(kw, k->kw)) continue;
    if (k->fields >= 0 && count_fields(p) != k->fields) return bad_meta(m, ln, k->bad);
    return k->fn(m, p, ln, res, h);
  }
  return unknown_keyword(m, kw, ln);
}

/* Marks the dimensions nothing depends on: a `let n = dim ()` no tensor uses. The sizes
 * the code reads are its tensors' axes (loop extents and strides come from them), the
 * checks, index ranges and flags, and the parts of a join that is one of those; an
 * unused dimension may stay unset (dims_set), and tdsl_set_dim still records a value
 * for it, so a host that sets every dimension a model had keeps working when a new
 * version of the model stops using one. */
static void dims_used(tdsl_model *m) {
  if (!m->ndims) return;
  char *used = calloc((size_t)m->ndims, 1);
  if (!used) return; /* every dimension stays required: the old behaviour */
#define USE(d) do { if ((d) < 0 && -1 - (d) < m->ndims) used[-1 - (d)] = 1; } while (0)
  for (int i = 0; i < m->nbufs; i++)
    for (int k = 0; m->bufs[i].decl && k < m->bufs[i].rank; k++) USE(m->bufs[i].decl[k]);
  for (int i = 0; i < m->nchecks; i++) {
    USE(m->checks[i].size);
    USE(m->checks[i].expect);
  }
  for (int i = 0; i < m->nsyms; i++) USE(m->sym_range[i]);
  for (int i = 0; i < m->nflags; i++) used[m->flags[i].of] = 1;
#undef USE
  for (int i = m->nset; i < m->ndims; i++) /* joins come after the dims they join */
    for (int k = 0; used[i] && k < m->dims[i].nparts; k++) used[m->dims[i].parts[k]] = 1;
  for (int i = 0; i < m->ndims; i++) m->dims[i].unused = !used[i];
  free(used);
}

static int parse_meta(tdsl_model *m, const char *text, tdsl_resolver res, void *h) {
  char *copy = xstrdup(text);
  if (!copy) return fail(m, "out of memory");
  int rc = 0, ln = 0;
  for (char *line = copy, *nl; !rc && line && *line; line = nl) {
    nl = strchr(line, '\n');
    if (nl) *nl++ = 0;
    rc = meta_line(m, line, ++ln, res, h);
  }
  free(copy);
  if (!rc && !m->inst) rc = fail(m, "malformed model metadata: no model line");
  for (int i = 0; i < m->nbufs && !rc; i++)
    if (m->bufs[i].decl ? !m->bufs[i].slot : !m->bufs[i].data)
      rc = fail(m, "malformed model metadata: no storage for tensor %s", m->bufs[i].name);
  if (!rc) dims_used(m);
  return rc;
}

/* The cuda part's view of the model: tdsl_buf_N, tdsl_sym_N and tdsl_dim_N (the
 * dynamic dimensions, then the flags, numbered as in the metadata) are this instance's
 * storage, tdsl_cuda_ctx / tdsl_cuda_launch its header slots, and any other tdsl_X the
 * model's NAME_X. */
static void *inst_resolve(void *h, const char *name) {
  tdsl_model *m = h;
  int i;
  char c;
  if (sscanf(name, "tdsl_buf_%d%c", &i, &c) == 1) return i >= 0 && i < m->nbufs ? m->bufs[i].data : NULL;
  if (sscanf(name, "tdsl_sym_%d%c", &i, &c) == 1) return i >= 0 && i < m->nsyms ? m->syms[i].ptr : NULL;
  if (sscanf(name, "tdsl_dim_%d%c", &i, &c) == 1)
    return i >= 0 && i < m->ndims ? m->dims[i].ptr : i >= m->ndims && i < m->ndims + m->nflags ? m->flags[i - m->ndims].ptr : NULL;
  if (!strcmp(name, "tdsl_cuda_ctx")) return (void **)m->inst;
  if (!strcmp(name, "tdsl_cuda_launch")) return (void **)m->inst + 1;
  if (strncmp(name, "tdsl_", 5)) return NULL;
  char sym[256];
  snprintf(sym, sizeof sym, "%s_%s", m->prefix, name + 5);
  return m->res(m->res_h, sym);
}

void *tdsl_instance(tdsl_model *m) {
  if (!enter(m)) return NULL;
  void *inst = m->inst;
  leave(m);
  return inst;
}

/* ---- threads ---- */

static int default_threads(void) {
  const char *e = getenv("TDSL_NUM_THREADS");
  if (e && *e) {
    char *end;
    long v = strtol(e, &end, 10);
    if (!*end && v >= 1 && v <= 1024) return (int)v;
  }
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c >= 1 && c <= 1024 ? (int)c : 1;
}

/* Ends m's pool. One started before a fork, seen in the child, has no threads here: a
 * join would wait forever, so its memory is freed without one. */
static void pool_drop(tdsl_model *m) {
  if (m->pool && m->pool_fork == atomic_load_explicit(&fork_count, memory_order_relaxed)) tdsl_pool_free(m->pool);
  else tdsl_pool_forget(m->pool);
  m->pool = NULL;
}

/* Called by the model's code, which runs inside tdsl_call (this thread holds m's lock:
 * entering again only counts) or, through an --emit-header host's direct calls on
 * tdsl_instance(m), outside any: entering then keeps tdsl_set_num_threads and
 * tdsl_close in other threads from ending the pool while a loop runs on it. A model
 * that is not open (closed under the host's direct call) runs the loop serially. */
static void rt_parallel(void *rt, tdsl_par_fn fn, void *arg, long n) {
  tdsl_model *m = rt;
  if (!enter(m)) {
    if (n > 0) fn(arg, 0, n);
    return;
  }
  if (m->pool && m->pool_fork != atomic_load_explicit(&fork_count, memory_order_relaxed)) pool_drop(m);
  if (m->nthreads > 1 && !m->pool) {
    m->pool_fork = atomic_load_explicit(&fork_count, memory_order_relaxed);
    if (!(m->pool = tdsl_pool_new(m->nthreads))) m->nthreads = 1;
  }
  tdsl_pool_run(m->pool, fn, arg, n);
  leave(m);
}

/* A model with parallel loops calls slot 2 of its instance header (this runtime's
 * rt_parallel) with slot 3 (this model); NULL there runs them serially. Per instance,
 * so every open model has its own pool. */
static void attach_pool(tdsl_model *m) {
  m->nthreads = default_threads();
  if (!m->parallel) return;
  tdsl_par_hook hook = rt_parallel;
  memcpy((void **)m->inst + 2, &hook, sizeof hook);
  ((void **)m->inst)[3] = m;
}

static int set_num_threads_in(tdsl_model *m, int n) {
  if (n < 1 || n > 1024) return fail(m, "tdsl_set_num_threads: %d threads (want 1 to 1024)", n);
  if (n != m->nthreads) {
    pool_drop(m);
    m->nthreads = n;
  }
  return 0;
}

int tdsl_set_num_threads(tdsl_model *m, int n) {
  if (!enter(m)) return -1;
  int rc = set_num_threads_in(m, n);
  leave(m);
  return rc;
}

int tdsl_get_num_threads(const tdsl_model *m) {
  if (!enter(m)) return -1;
  int n = m->nthreads;
  leave(m);
  return n;
}

static void init_at_open(tdsl_model *m);
static int init_in(tdsl_model *m, uint64_t seed);

tdsl_model *tdsl_open_resolved(tdsl_resolver resolve, void *handle, char *err, size_t errlen) {
  if (!resolve) {
    if (err && errlen) snprintf(err, errlen, "tdsl_open_resolved: NULL resolver");
    return NULL;
  }
  tdsl_model *m = calloc(1, sizeof *m);
  if (!m) {
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  m->magic = MODEL_MAGIC;
  model_lock_init(m);
  if (!reg_add(m)) {
    if (err && errlen) snprintf(err, errlen, "out of memory");
    pthread_mutex_destroy(&m->mu);
    free(m);
    return NULL;
  }
  void *meta_sym = resolve(handle, "tdsl_model_meta");
  if (not_code(meta_sym)) {
    if (err && errlen) snprintf(err, errlen, "not a tdslc model (its tdsl_model_meta is not a function)");
    tdsl_close(m);
    return NULL;
  }
  const char *(*meta)(void) = (const char *(*)(void))meta_sym;
  const char *text = meta ? meta() : NULL;
  if (!text || strncmp(text, "tdsl 3\n", 7)) {
    if (err && errlen)
      snprintf(err, errlen, text && !strncmp(text, "tdsl ", 5) ? "model compiled by another tdslc version (recompile it)"
                                                              : "not a tdslc model (no tdsl_model_meta)");
    tdsl_close(m);
    return NULL;
  }
  m->res = resolve;
  m->res_h = handle;
  if (parse_meta(m, text, resolve, handle)) {
    if (err && errlen) snprintf(err, errlen, "%s", m->err);
    tdsl_close(m);
    return NULL;
  }
  if (tdsl_cuda_is_model(text) && !(m->cuda = tdsl_cuda_open(inst_resolve, m, err, errlen))) {
    tdsl_close(m);
    return NULL;
  }
  attach_pool(m);
  init_at_open(m);
  return m;
}

static void *dl_resolve(void *h, const char *name) { return dlsym(h, name); }

/* Whether an ELF file's loadable segments lie within it. dlopen maps a segment that
 * ends past the end of the file and then faults on it (SIGBUS in the loader: a model
 * truncated by a full disk or an interrupted copy killed its host). NULL when it may be
 * handed to dlopen (which reports files that are not ELF, of another class or machine),
 * else why not. */
static const char *elf_truncated(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  Elf64_Ehdr eh;
  const char *why = NULL;
  struct stat st;
  if (fstat(fileno(f), &st) || fread(&eh, sizeof eh, 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    fclose(f);
    return NULL;
  }
  unsigned long long size = (unsigned long long)st.st_size;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size || (unsigned long long)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff)
    why = "its program headers lie past its end (truncated?)";
  for (int i = 0; !why && i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (fseek(f, (long)(eh.e_phoff + (unsigned long long)i * sizeof ph), SEEK_SET) || fread(&ph, sizeof ph, 1, f) != 1)
      why = "cannot read its program headers";
    else if (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))
      why = "a segment lies past its end (truncated?)";
  }
  fclose(f);
  return why;
}

/* Whether the library h that the dynamic linker has loaded is the file st describes:
 * the mapping holding its dynamic section (/proc/self/maps) has the file's device and
 * inode. True when that cannot be told (no /proc): then dlopen decides as before. */
static bool loaded_is_file(void *h, const struct stat *st) {
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) || !lm || !lm->l_ld) return true;
  unsigned long at = (unsigned long)lm->l_ld;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return true;
  char line[4352];
  bool same = true;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, ino;
    unsigned maj, min;
    if (sscanf(line, "%lx-%lx %*s %*s %x:%x %lu", &lo, &hi, &maj, &min, &ino) != 5 || at < lo || at >= hi) continue;
    same = ino == (unsigned long)st->st_ino && maj == major(st->st_dev) && min == minor(st->st_dev);
    break;
  }
  fclose(f);
  return same;
}

/* dlopen of a private copy of path (under $TMPDIR, removed once loaded): a library name
 * the process has never loaded. NULL with dlerror()'s or errno's message in err. */
static void *dlopen_copy(const char *path, char *err, size_t errlen) {
  const char *t = getenv("TMPDIR");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s/tdsl-model-XXXXXX.so", t && *t ? t : "/tmp");
  int out = mkstemps(tmp, 3);
  if (out < 0) {
    snprintf(tmp, sizeof tmp, "/tmp/tdsl-model-XXXXXX.so");
    out = mkstemps(tmp, 3);
  }
  int in = open(path, O_RDONLY | O_CLOEXEC);
  bool ok = out >= 0 && in >= 0;
  char buf[65536];
  ssize_t n = 0;
  while (ok && (n = read(in, buf, sizeof buf)) > 0)
    for (ssize_t done = 0; ok && done < n;) {
      ssize_t w = write(out, buf + done, (size_t)(n - done));
      if (w > 0) done += w;
      else if (w < 0 && errno != EINTR) ok = false;
    }
  ok = ok && n == 0;
  int e = errno;
  if (in >= 0) close(in);
  if (out >= 0 && close(out)) ok = false;
  void *dl = ok ? dlopen(tmp, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!dl && err && errlen)
    snprintf(err, errlen, "cannot open model %s: %s", path, ok ? dlerror() : strerror(e ? e : EIO));
  if (out >= 0) unlink(tmp);
  return dl;
}

tdsl_model *tdsl_open(const char *path, char *err, size_t errlen) {
  /* dlopen searches the library path for a bare name; a model is a file. */
  char buf[4096];
  if (!path || !*path) {
    if (err && errlen) snprintf(err, errlen, "tdsl_open: %s model path", path ? "empty" : "NULL");
    return NULL;
  }
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (err && errlen) snprintf(err, errlen, "cannot open model %s: it is a directory", path);
    return NULL;
  }
  /* opening a FIFO (to check its ELF headers, or in dlopen) blocks until a writer comes */
  if (stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
    if (err && errlen) snprintf(err, errlen, "cannot open model %s: not a regular file (a pipe or socket)", path);
    return NULL;
  }
  if (!strchr(path, '/')) {
    snprintf(buf, sizeof buf, "./%s", path);
    path = buf;
  }
  const char *trunc = elf_truncated(path);
  if (trunc) {
    if (err && errlen) snprintf(err, errlen, "cannot open model %s: %s", path, trunc);
    return NULL;
  }
  /* dlopen knows a library by the name it was opened with: a model recompiled at the
   * path of one still loaded (open in another tdsl_model, or kept by a Python view of
   * a closed one) came back as the old library, its old tensors and code, silently.
   * Such a file is loaded through a copy of its own name. */
  void *dl = NULL, *old = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (old) {
    bool same = stat(path, &st) != 0 || loaded_is_file(old, &st);
    dlclose(old);
    if (!same && !(dl = dlopen_copy(path, err, errlen))) return NULL;
  }
  if (!dl) dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    if (err && errlen) snprintf(err, errlen, "cannot open model %s: %s", path, dlerror());
    return NULL;
  }
  tdsl_model *m = tdsl_open_resolved(dl_resolve, dl, err, errlen);
  if (!m) {
    dlclose(dl);
    return NULL;
  }
  m->dl = dl;
  return m;
}

void tdsl_close(tdsl_model *m) {
  if (!m || !reg_remove(m)) return;
  /* No call can enter now; the one inside, and those waiting for the lock, go first. */
  for (;;) {
    pthread_mutex_lock(&m->mu);
    if (!atomic_load_explicit(&m->waiting, memory_order_relaxed)) break;
    pthread_mutex_unlock(&m->mu);
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
  }
  m->magic = 0;
  pthread_mutex_unlock(&m->mu);
  pthread_mutex_destroy(&m->mu);
  pool_drop(m);
  tdsl_cuda_close(m->cuda);
  for (int i = 0; i < m->nbufs; i++) {
    RtBuf *b = &m->bufs[i];
    free(b->name);
    for (int k = 0; k < b->rank; k++) free(b->labels[k]);
    free(b->labels);
    free(b->dims);
    free(b->values);
    free(b->path);
    for (int k = 0; k < b->nprog; k++) free(b->prog[k].values);
    free(b->prog);
    if (b->decl) free(b->data);
    free(b->decl);
  }
  for (int i = 0; i < m->ndims; i++) {
    free(m->dims[i].name);
    free(m->dims[i].parts);
  }
  for (int i = 0; i < m->nholds; i++)
    if (m->holds[i].orphan) free(m->holds[i].ptr);
  free(m->holds);
  free(m->dims);
  free(m->flags);
  for (int i = 0; i < m->nchecks; i++) free(m->checks[i].msg);
  free(m->checks);
  for (int i = 0; i < m->nsyms; i++) free(m->syms[i].name);
  for (int i = 0; i < m->nfns; i++) {
    free(m->fns[i].name);
    free(m->fns[i].runs);
  }
  for (int i = 0; i < m->naliases; i++) free(m->aliases[i].name);
  free(m->bufs);
  free(m->syms);
  free(m->sym_range);
  free(m->fns);
  free(m->aliases);
  free(m->prefix);
  free(m->inst);
  if (m->dl) dlclose(m->dl);
  free(m);
}

/* ---- tensors ---- */

int tdsl_num_tensors(const tdsl_model *m) {
  if (!enter(m)) return -1;
  int n = m->nbufs;
  leave(m);
  return n;
}

/* Aliases first: the compiler emits one only for a name's last binding, which may shadow an
 * earlier tensor's buffer name (`let%op g = g + 1`). */
static int find_exact(const tdsl_model *m, const char *name, size_t len) {
  for (int i = 0; i < m->naliases; i++)
    if (strlen(m->aliases[i].name) == len && !strncmp(m->aliases[i].name, name, len)) return m->aliases[i].index;
  for (int i = 0; i < m->nbufs; i++)
    if (strlen(m->bufs[i].name) == len && !strncmp(m->bufs[i].name, name, len)) return i;
  return -1;
}

/* "T.grad" through an alias: the gradient buffer of what T names. */
static int find_with_suffix(const tdsl_model *m, const char *name, const char *suffix, const char **base) {
  size_t n = strlen(name), s = strlen(suffix);
  if (n <= s || strcmp(name + n - s, suffix)) return -1;
  int b = find_exact(m, name, n - s);
  if (b < 0) return -1;
  *base = m->bufs[b].name;
  return b;
}

/* Whether s is a followed by b (compared in place: a name of any length). */
static bool is_concat(const char *s, const char *a, const char *b) {
  size_t n = strlen(a);
  return !strncmp(s, a, n) && !strcmp(s + n, b);
}

static int find_tensor_in(const tdsl_model *m, const char *name) {
  if (!name) return -1;
  int i = find_exact(m, name, strlen(name));
  if (i >= 0) return i;
  const char *base;
  if (find_with_suffix(m, name, ".grad", &base) < 0) return -1;
  for (i = 0; i < m->naliases; i++) /* as find_exact, for base ".grad" */
    if (is_concat(m->aliases[i].name, base, ".grad")) return m->aliases[i].index;
  for (i = 0; i < m->nbufs; i++)
    if (is_concat(m->bufs[i].name, base, ".grad")) return i;
  return -1;
}

int tdsl_find_tensor(const tdsl_model *m, const char *name) {
  if (!enter(m)) return -1;
  int rc = find_tensor_in(m, name);
  leave(m);
  return rc;
}

int tdsl_rt_find_saved(const tdsl_model *m, const char *name) {
  if (!name) return -1;
  for (int i = 0; i < m->nbufs; i++)
    if (!strcmp(m->bufs[i].name, name)) return i;
  return find_tensor_in(m, name);
}

static int tensor_in(tdsl_model *m, int i, tdsl_tensor_info *out) {
  if (need(m, "tdsl_tensor", "info pointer", out)) return -1;
  if (i < 0 || i >= m->nbufs) return fail(m, "no tensor number %d", i);
  if (m->cuda && adopt_err(m, tdsl_cuda_host_access(m->cuda, i, TDSL_CUDA_READ_WRITE, m->err, sizeof m->err))) return -1;
  RtBuf *b = &m->bufs[i];
  out->name = b->name;
  out->rank = b->rank;
  memcpy(out->nkind, b->nkind, sizeof out->nkind);
  out->dims = b->dims;
  out->labels = (const char *const *)b->labels;
  out->elem = b->elem;
  out->size = b->size;
  out->data = b->data;
  out->role = b->role;
  return 0;
}

int tdsl_tensor(tdsl_model *m, int i, tdsl_tensor_info *out) {
  if (!enter(m)) return -1;
  int rc = tensor_in(m, i, out);
  leave(m);
  return rc;
}

static RtBuf *lookup(tdsl_model *m, const char *name) {
  if (need(m, "tensor lookup", "name", name)) return NULL;
  int i = find_tensor_in(m, name);
  if (i < 0) {
    fail(m, "no tensor named '%s'", name);
    return NULL;
  }
  return &m->bufs[i];
}

static int tensor_by_name_in(tdsl_model *m, const char *name, tdsl_tensor_info *out) {
  if (need(m, "tdsl_tensor_by_name", "name", name)) return -1;
  int i = find_tensor_in(m, name);
  if (i < 0) return fail(m, "no tensor named '%s'", name);
  return tensor_in(m, i, out);
}

int tdsl_tensor_by_name(tdsl_model *m, const char *name, tdsl_tensor_info *out) {
  if (!enter(m)) return -1;
  int rc = tensor_by_name_in(m, name, out);
  leave(m);
  return rc;
}

static double get(const RtBuf *b, long i) { return b->elem == TDSL_F64 ? ((double *)b->data)[i] : ((float *)b->data)[i]; }
static void set(RtBuf *b, long i, double v) {
  if (b->elem == TDSL_F64) ((double *)b->data)[i] = v;
  else ((float *)b->data)[i] = (float)v;
}

static RtBuf *sized(tdsl_model *m, const char *name, long n) {
  RtBuf *b = lookup(m, name);
  if (b && n != b->size) {
    fail(m, "tensor '%s' has %ld elements, not %ld", name, b->size, n);
    return NULL;
  }
  return b;
}

/* A cuda model: bring the host copy up to date before the host uses it. */
static int host_access(tdsl_model *m, RtBuf *b, int mode) {
  return m->cuda ? adopt_err(m, tdsl_cuda_host_access(m->cuda, (int)(b - m->bufs), mode, m->err, sizeof m->err)) : 0;
}

static int read_in(tdsl_model *m, const char *name, float *dst, long n) {
  if (need(m, "tdsl_read", "name", name) || need_data(m, "tdsl_read", dst, n)) return -1;
  RtBuf *b = sized(m, name, n);
  if (!b || host_access(m, b, TDSL_CUDA_READ)) return -1;
  for (long i = 0; i < n; i++) dst[i] = (float)get(b, i);
  return 0;
}

int tdsl_read(tdsl_model *m, const char *name, float *dst, long n) {
  if (!enter(m)) return -1;
  int rc = read_in(m, name, dst, n);
  leave(m);
  return rc;
}

static int write_in(tdsl_model *m, const char *name, const float *src, long n) {
  if (need(m, "tdsl_write", "name", name) || need_data(m, "tdsl_write", src, n)) return -1;
  RtBuf *b = sized(m, name, n);
  if (!b || host_access(m, b, TDSL_CUDA_OVERWRITE)) return -1;
  for (long i = 0; i < n; i++) set(b, i, src[i]);
  return 0;
}

int tdsl_write(tdsl_model *m, const char *name, const float *src, long n) {
  if (!enter(m)) return -1;
  int rc = write_in(m, name, src, n);
  leave(m);
  return rc;
}

static int read_f64_in(tdsl_model *m, const char *name, double *dst, long n) {
  if (need(m, "tdsl_read_f64", "name", name) || need_data(m, "tdsl_read_f64", dst, n)) return -1;
  RtBuf *b = sized(m, name, n);
  if (!b || host_access(m, b, TDSL_CUDA_READ)) return -1;
  for (long i = 0; i < n; i++) dst[i] = get(b, i);
  return 0;
}

int tdsl_read_f64(tdsl_model *m, const char *name, double *dst, long n) {
  if (!enter(m)) return -1;
  int rc = read_f64_in(m, name, dst, n);
  leave(m);
  return rc;
}

static int write_f64_in(tdsl_model *m, const char *name, const double *src, long n) {
  if (need(m, "tdsl_write_f64", "name", name) || need_data(m, "tdsl_write_f64", src, n)) return -1;
  RtBuf *b = sized(m, name, n);
  if (!b || host_access(m, b, TDSL_CUDA_OVERWRITE)) return -1;
  for (long i = 0; i < n; i++) set(b, i, src[i]);
  return 0;
}

int tdsl_write_f64(tdsl_model *m, const char *name, const double *src, long n) {
  if (!enter(m)) return -1;
  int rc = write_f64_in(m, name, src, n);
  leave(m);
  return rc;
}

int tdsl_rt_readable(tdsl_model *m, const char *path) {
  struct stat st;
  if (stat(path, &st)) return 0; /* fopen reports it */
  if (S_ISDIR(st.st_mode)) return fail(m, "cannot read '%s': it is a directory", path);
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return fail(m, "cannot read '%s': not a regular file (a pipe or socket)", path);
  return 0;
}

/* Reads a raw little-endian float32 file of exactly b->size values into b. */
static int load_raw(tdsl_model *m, RtBuf *b, const char *path) {
  if (tdsl_rt_readable(m, path)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return fail(m, "cannot read '%s': %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (bytes != b->size * 4) {
    fclose(f);
    /* A raw file has no shape: a dynamic dimension not set yet makes the tensor empty,
     * and "has 0 elements" would hide why. */
    for (int k = 0; b->decl && k < b->rank; k++)
      if (b->decl[k] < 0 && !m->dims[-1 - b->decl[k]].set) {
        const char *d = m->dims[-1 - b->decl[k]].name;
        return fail(m, "'%s' is a raw float32 file, which has no shape, and tensor %s has the dynamic dimension %s, "
                       "not set: set %s first (tdsl_set_dim, tdslc --set %s=N) or load a .npy file, whose shape sets it",
                    path, b->name, d, d, d);
      }
    const char *f64 = bytes == b->size * 8 && b->size > 0
                          ? " (twice as many bytes: float64 values? a raw file holds float32; a .npy file may hold float64)"
                          : "";
    return fail(m, "'%s' has %ld bytes (%ld float32 value%s) but tensor %s has %ld elements%s", path, bytes,
                bytes / 4, bytes / 4 == 1 ? "" : "s", b->name, b->size, f64);
  }
  unsigned char q[4];
  for (long i = 0; i < b->size; i++) {
    if (fread(q, 1, 4, f) != 4) {
      fclose(f);
      return fail(m, "short read from '%s'", path);
    }
    uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    float v;
    memcpy(&v, &u, 4);
    set(b, i, v);
  }
  fclose(f);
  return 0;
}

static int load_file_in(tdsl_model *m, const char *name, const char *path) {
  if (need(m, "tdsl_load_file", "name", name) || need(m, "tdsl_load_file", "path", path)) return -1;
  if (tdsl_rt_readable(m, path)) return -1;
  if (tdsl_rt_is_npy(path)) return tdsl_rt_load_npy(m, name, path);
  RtBuf *b = lookup(m, name);
  return b && !host_access(m, b, TDSL_CUDA_OVERWRITE) ? load_raw(m, b, path) : -1;
}

int tdsl_load_file(tdsl_model *m, const char *name, const char *path) {
  if (!enter(m)) return -1;
  int rc = load_file_in(m, name, path);
  leave(m);
  return rc;
}

/* ---- routines and indices ---- */

int tdsl_num_routines(const tdsl_model *m) {
  if (!enter(m)) return -1;
  int n = m->nfns;
  leave(m);
  return n;
}
const char *tdsl_routine_name(const tdsl_model *m, int i) {
  if (!enter(m)) return NULL;
  const char *name = i >= 0 && i < m->nfns ? m->fns[i].name : NULL;
  leave(m);
  return name;
}

static int find_fn(const tdsl_model *m, const char *name) {
  for (int i = 0; i < m->nfns; i++)
    if (!strcmp(m->fns[i].name, name)) return i;
  return -1;
}

static int find_routine_in(const tdsl_model *m, const char *name) {
  if (!name) return -1;
  /* T.forward / T.backprop of what T names (an alias may shadow a buffer's own routine) */
  const char *sfx[2] = {".forward", ".backprop"}, *base;
  for (int k = 0; k < 2; k++)
    if (find_with_suffix(m, name, sfx[k], &base) >= 0)
      for (int i = 0; i < m->nfns; i++)
        if (is_concat(m->fns[i].name, base, sfx[k])) return i;
  return find_fn(m, name);
}

int tdsl_find_routine(const tdsl_model *m, const char *name) {
  if (!enter(m)) return -1;
  int rc = find_routine_in(m, name);
  leave(m);
  return rc;
}

static int dims_set(tdsl_model *m, const char *routine);

static int call_in(tdsl_model *m, const char *name) {
  if (need(m, "tdsl_call", "name", name)) return -1;
  int i = find_routine_in(m, name);
  if (i < 0 && !strcmp(name, "init")) return init_in(m, m->seed); /* tdslc(1): init is exported */
  if (i < 0) {
    const char *base;
    size_t n = strlen(name);
    if (n > 9 && !strcmp(name + n - 9, ".backprop") && find_with_suffix(m, name, ".backprop", &base) >= 0)
      return fail(m, "tensor '%.*s' is not differentiable: it has no backprop", (int)(n - 9), name);
    return fail(m, "no routine named '%s'", name);
  }
  if (m->cuda && adopt_err(m, tdsl_cuda_error(m->cuda, m->err, sizeof m->err))) return -1;
  /* T.forward of a parameter or a constant runs nothing (init set T: tdslc(1)), so it
   * needs no dimension set: printing a parameter before the inputs are loaded works. */
  const char *base;
  int t = find_with_suffix(m, name, ".forward", &base);
  bool inert = t >= 0 && (m->bufs[t].role == TDSL_ROLE_PARAM || m->bufs[t].role == TDSL_ROLE_CONST);
  if (!inert && dims_set(m, name)) return -1;
  const RtNamed *r = &m->fns[i];
  if (!m->cuda || !tdsl_cuda_call_begin(m->cuda, i)) {
    if (r->ptr) ((void (*)(void *))r->ptr)(m->inst);
    run_seq(m, r);
  }
  if (m->cuda) tdsl_cuda_call_end(m->cuda, i);
  if (*inst_fault(m)) { /* a --check-bounds model's failed check, in this instance */
    *inst_fault(m) = 0;
    return fail(m, "%s: %.400s", name, (const char *)m->inst + INST_FAULT_MSG);
  }
  return m->cuda ? adopt_err(m, tdsl_cuda_error(m->cuda, m->err, sizeof m->err)) : 0;
}

int tdsl_call(tdsl_model *m, const char *name) {
  if (!enter(m)) return -1;
  int rc = call_in(m, name);
  leave(m);
  return rc;
}

int tdsl_num_indices(const tdsl_model *m) {
  if (!enter(m)) return -1;
  int n = m->nsyms;
  leave(m);
  return n;
}
const char *tdsl_index_name(const tdsl_model *m, int i) {
  if (!enter(m)) return NULL;
  const char *name = i >= 0 && i < m->nsyms ? m->syms[i].name : NULL;
  leave(m);
  return name;
}

static int find_sym(tdsl_model *m, const char *name) {
  for (int i = 0; i < m->nsyms; i++)
    if (!strcmp(m->syms[i].name, name)) return i;
  return fail(m, "no index symbol named '%s'", name) - 1;
}

static int set_index_in(tdsl_model *m, const char *name, long v) {
  if (need(m, "tdsl_set_index", "name", name)) return -1;
  int i = find_sym(m, name);
  if (i < 0) return -1;
  int r = m->sym_range[i];
  if (r < 0) { /* the range is a dynamic dimension's value */
    const RtNamed *d = &m->dims[-1 - r];
    if (!d->set) return fail(m, "index %s ranges over dimension %s, which is not set", name, d->name);
    if (!(r = *(int *)d->ptr)) /* as a static `index 0`: no value is in range */
      return fail(m, "index %s ranges over dimension %s = 0: no value is in its range", name, d->name);
  }
  if (v < 0 || (r > 0 && v >= r) || v > 2147483647L)
    return r > 0 ? fail(m, "index %s = %ld is out of its range 0..%d", name, v, r - 1)
                 : fail(m, "index %s = %ld is out of its range 0..%ld (unbounded: index ())", name, v, 2147483647L);
  *(int *)m->syms[i].ptr = (int)v;
  return 0;
}

int tdsl_set_index(tdsl_model *m, const char *name, long v) {
  if (!enter(m)) return -1;
  int rc = set_index_in(m, name, v);
  leave(m);
  return rc;
}

static int get_index_in(tdsl_model *m, const char *name, long *v) {
  if (need(m, "tdsl_get_index", "name", name) || need(m, "tdsl_get_index", "value pointer", v)) return -1;
  int i = find_sym(m, name);
  if (i < 0) return -1;
  *v = *(int *)m->syms[i].ptr;
  return 0;
}

int tdsl_get_index(tdsl_model *m, const char *name, long *v) {
  if (!enter(m)) return -1;
  int rc = get_index_in(m, name, v);
  leave(m);
  return rc;
}

/* ---- init ---- */

static uint32_t rotl(uint32_t x, int r) { return x << r | x >> (32 - r); }

/* Threefry-4x32-20 (Salmon et al., Random123): a keyed bijection of a 128-bit counter. */
static void threefry4x32(const uint32_t key[4], const uint32_t ctr[4], uint32_t out[4]) {
  static const int R[8][2] = {{10, 26}, {11, 21}, {13, 27}, {23, 5}, {6, 20}, {17, 11}, {25, 10}, {18, 20}};
  uint32_t ks[5] = {key[0], key[1], key[2], key[3], 0x1BD11BDAu ^ key[0] ^ key[1] ^ key[2] ^ key[3]};
  uint32_t x[4];
  for (int i = 0; i < 4; i++) x[i] = ctr[i] + ks[i];
  for (int r = 0; r < 20; r++) {
    if (r % 2 == 0) {
      x[0] += x[1]; x[1] = rotl(x[1], R[r % 8][0]); x[1] ^= x[0];
      x[2] += x[3]; x[3] = rotl(x[3], R[r % 8][1]); x[3] ^= x[2];
    } else {
      x[0] += x[3]; x[3] = rotl(x[3], R[r % 8][0]); x[3] ^= x[0];
      x[2] += x[1]; x[1] = rotl(x[1], R[r % 8][1]); x[1] ^= x[2];
    }
    if (r % 4 == 3) {
      uint32_t s = (uint32_t)(r + 1) / 4;
      for (int i = 0; i < 4; i++) x[i] += ks[(s + (uint32_t)i) % 5];
      x[3] += s;
    }
  }
  memcpy(out, x, sizeof x);
}

/* Cell i of stream s, sub-stream sub (the k-th random leaf of an init program; 0 for
 * a plain uniform): counter (i, s, sub), key (seed): independent of visiting order. */
static void draw(uint64_t seed, int stream, int sub, long i, uint32_t out[4]) {
  uint32_t key[4] = {(uint32_t)seed, (uint32_t)(seed >> 32), 0x74647331u, 0};
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)((uint64_t)i >> 32), (uint32_t)stream, (uint32_t)sub};
  threefry4x32(key, ctr, out);
}

static double unit53(uint32_t hi, uint32_t lo) {
  return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * 0x1p-53;
}

static double uniform_cell(uint64_t seed, int stream, int sub, long i, bool f64) {
  uint32_t out[4];
  draw(seed, stream, sub, i, out);
  return f64 ? unit53(out[0], out[1]) : (double)(out[0] >> 8) * 0x1p-24;
}

/* Box-Muller on two 53-bit uniforms; 1 - u keeps the logarithm's argument in (0, 1]. */
static double normal_cell(uint64_t seed, int stream, int sub, long i) {
  uint32_t out[4];
  draw(seed, stream, sub, i, out);
  double u1 = 1.0 - unit53(out[0], out[1]), u2 = unit53(out[2], out[3]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The primitives' semantics as the compiler's op_eval (src/ops.c). */
static double step_apply(StepKind k, double a, double b, double c) {
  switch (k) {
  case S_NEG: return -a;
  case S_EXP: return exp(a);
  case S_LOG: return log(a);
  case S_SQRT: return sqrt(a);
  case S_SIN: return sin(a);
  case S_COS: return cos(a);
  case S_TANH: return tanh(a);
  case S_RELU: return a >= 0.0 ? a : 0.0;
  case S_RECIP: return 1.0 / a;
  case S_SAT01: return a <= 0.0 ? 0.0 : a >= 1.0 ? 1.0 : a;
  case S_EXP2: return pow(2.0, a);
  case S_LOG2: return log(a) / log(2.0);
  case S_RECIP_SQRT: return 1.0 / sqrt(a);
  case S_NOT: return a == 0.0 ? 1.0 : 0.0;
  case S_ERF: return erf(a);
  case S_ADD: return a + b;
  case S_SUB: return a - b;
  case S_MUL: return a * b;
  case S_DIV: return a / b;
  case S_POW: return pow(a, b);
  case S_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case S_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case S_FST: return a;
  case S_SND: return b;
  case S_RELU_GATE: return a > 0.0 ? b : 0.0;
  case S_SAT01_GATE: return a > 0.0 && a < 1.0 ? b : 0.0;
  case S_LT: return a < b ? 1.0 : 0.0;
  case S_EQ: return a == b ? 1.0 : 0.0;
  case S_NE: return a != b ? 1.0 : 0.0;
  case S_OR: return a != 0.0 || b != 0.0 ? 1.0 : 0.0;
  case S_AND: return a != 0.0 && b != 0.0 ? 1.0 : 0.0;
  case S_MOD: return fmod(a, b);
  case S_WHERE: return a != 0.0 ? b : c;
  case S_FMA: return a * b + c;
  default: return a; /* S_ID */
  }
}

static double prog_cell(const RtBuf *b, uint64_t seed, long i) {
  double st[MAX_STACK];
  int sp = 0, sub = 0;
  for (int k = 0; k < b->nprog; k++) {
    const InitStep *s = &b->prog[k];
    switch (s->kind) {
    case S_CONST: st[sp++] = s->value; break;
    case S_RANGE: st[sp++] = (double)i; break;
    case S_VALUES: st[sp++] = s->values[i % s->nvalues]; break;
    case S_UNIFORM: st[sp++] = uniform_cell(seed, b->stream, sub++, i, b->elem == TDSL_F64); break;
    case S_NORMAL: st[sp++] = normal_cell(seed, b->stream, sub++, i); break;
    default: {
      int n = step_arity(s->kind); /* parse_prog checked that the stack holds n */
      sp -= n - 1;
      st[sp - 1] = step_apply(s->kind, st[sp - 1], n > 1 ? st[sp] : 0.0, n > 2 ? st[sp + 1] : 0.0);
    }
    }
  }
  return st[0];
}

/* Buffer b's cells from its init (else zeros). */
static int init_buf(tdsl_model *m, RtBuf *b, uint64_t seed) {
  if (!b->data) return 0; /* a dynamic buffer whose dims are not set yet */
  if (host_access(m, b, TDSL_CUDA_OVERWRITE)) return -1;
  memset(b->data, 0, (size_t)b->size * (b->elem == TDSL_F64 ? 8 : 4));
  switch (b->init) {
    case INIT_CONST: for (long i = 0; i < b->size; i++) set(b, i, b->value); break;
    case INIT_VALUES: /* literal cells in memory order; a shorter list repeats */
      if (b->nvalues > 0)
        for (long i = 0; i < b->size; i++) set(b, i, b->values[i % b->nvalues]);
      break;
    case INIT_RANGE: for (long i = 0; i < b->size; i++) set(b, i, (double)i); break;
    case INIT_UNIFORM: for (long i = 0; i < b->size; i++) set(b, i, uniform_cell(seed, b->stream, 0, i, b->elem == TDSL_F64)); break;
    case INIT_EXPR: for (long i = 0; i < b->size; i++) set(b, i, prog_cell(b, seed, i)); break;
    case INIT_FILE:
      if (load_raw(m, b, b->path)) return -1;
      break;
    case INIT_ZERO: break;
  }
  return 0;
}

static int init_in(tdsl_model *m, uint64_t seed) {
  m->seed = seed;
  for (int i = 0; i < m->nsyms; i++) *(int *)m->syms[i].ptr = 0;
  for (int bi = 0; bi < m->nbufs; bi++)
    if (init_buf(m, &m->bufs[bi], seed)) return -1;
  return 0;
}

/* A model opens initialized as tdsl_init(m, 0) does (dynamic tensors are, when
 * allocated): a host that set the parameters itself or loaded a checkpoint of them, and
 * never called tdsl_init, computed with constants (a range, a literal) left 0. A data
 * file that cannot be read leaves its tensor 0 here, not failing the open (a checkpoint
 * may provide the tensor); tdsl_init reports it. */
static void init_at_open(tdsl_model *m) {
  bool failed = false;
  for (int i = 0; i < m->nbufs; i++) failed |= init_buf(m, &m->bufs[i], 0) != 0;
  if (failed) { /* no call of the host's failed */
    err_slot(m, false)[0] = 0;
    m->err[0] = 0;
  }
}

int tdsl_init(tdsl_model *m, uint64_t seed) {
  if (!enter(m)) return -1;
  int rc = init_in(m, seed);
  leave(m);
  return rc;
}

/* ---- dynamic dimensions ---- */

int tdsl_num_dims(const tdsl_model *m) {
  if (!enter(m)) return -1;
  int n = m->nset;
  leave(m);
  return n;
}
const char *tdsl_dim_name(const tdsl_model *m, int i) {
  if (!enter(m)) return NULL;
  const char *name = i >= 0 && i < m->nset ? m->dims[i].name : NULL;
  leave(m);
  return name;
}

static int find_dim(const tdsl_model *m, const char *name) {
  for (int i = 0; i < m->ndims; i++)
    if (!strcmp(m->dims[i].name, name)) return i;
  return -1;
}

static int dim_value(const tdsl_model *m, int id) { return *(int *)m->dims[id].ptr; }

/* A dimension's value, or -1 while it is not set. */
static long dim_state(const tdsl_model *m, int id) { return m->dims[id].set ? dim_value(m, id) : -1; }

static int get_dim_in(tdsl_model *m, const char *name, long *v) {
  if (need(m, "tdsl_get_dim", "name", name) || need(m, "tdsl_get_dim", "value pointer", v)) return -1;
  int i = find_dim(m, name);
  if (i < 0) return fail(m, "no dynamic dimension named '%s'", name);
  *v = dim_state(m, i);
  return 0;
}

int tdsl_get_dim(tdsl_model *m, const char *name, long *v) {
  if (!enter(m)) return -1;
  int rc = get_dim_in(m, name, v);
  leave(m);
  return rc;
}

/* b's size with the dimensions' current values (0 while one is unset or 0; -1: too big). */
static long dyn_size(const tdsl_model *m, const RtBuf *b) {
  long size = 1;
  for (int k = 0; k < b->rank; k++) {
    long d = b->decl[k] < 0 ? dim_value(m, -1 - b->decl[k]) : b->decl[k];
    if (d == 0) return 0;
    if (size > LONG_MAX / 8 / d) return -1;
    size *= d;
  }
  return size;
}

/* The hold of dynamic storage p, or NULL. */
static struct RtHold *find_hold(tdsl_model *m, const void *p) {
  for (int i = 0; i < m->nholds; i++)
    if (m->holds[i].ptr == p) return &m->holds[i];
  return NULL;
}

/* Storage a dynamic buffer no longer uses: freed, unless a hold keeps it for a view. */
static void drop_storage(tdsl_model *m, void *p) {
  struct RtHold *h = p ? find_hold(m, p) : NULL;
  if (h) h->orphan = true;
  else free(p);
}

/* The tensor whose storage data is, or NULL. */
static RtBuf *buf_of_data(tdsl_model *m, const void *data) {
  for (int i = 0; data && i < m->nbufs; i++)
    if (m->bufs[i].data == data) return &m->bufs[i];
  return NULL;
}

static int hold_in(tdsl_model *m, const void *data) {
  if (need(m, "tdsl_hold", "data pointer", data)) return -1;
  struct RtHold *h = find_hold(m, data);
  RtBuf *b = h ? NULL : buf_of_data(m, data);
  if (!h && !b) return fail(m, "tdsl_hold: %p is not a tensor's storage", data);
  if (!h && !b->decl) return 0; /* in the instance: lives as long as the model */
  if (!h) {
    struct RtHold *grown = grow(m->holds, m->nholds, sizeof *grown);
    if (!grown) return fail(m, "out of memory");
    m->holds = grown;
    h = &m->holds[m->nholds++];
    *h = (struct RtHold){(void *)data, 0, false};
  }
  h->count++;
  return 0;
}

int tdsl_hold(tdsl_model *m, const void *data) {
  if (!enter(m)) return -1;
  int rc = hold_in(m, data);
  leave(m);
  return rc;
}

static int release_in(tdsl_model *m, const void *data) {
  if (need(m, "tdsl_release", "data pointer", data)) return -1;
  struct RtHold *h = find_hold(m, data);
  if (!h) {
    RtBuf *b = buf_of_data(m, data);
    return b && !b->decl ? 0 : fail(m, "tdsl_release: %p is not held", data);
  }
  if (--h->count > 0) return 0;
  if (h->orphan) free(h->ptr);
  *h = m->holds[--m->nholds];
  return 0;
}

int tdsl_release(tdsl_model *m, const void *data) {
  if (!enter(m)) return -1;
  int rc = release_in(m, data);
  leave(m);
  return rc;
}

/* The most a tensor may ask for: the machine's memory and swap. A larger request would
 * fail anyway, and under a sanitizer's allocator (ASan's limit is 1 TiB) or with
 * overcommit it would abort or succeed only to be killed later; a hostile set_dim or
 * checkpoint shape must get a message instead. */
static size_t memory_bytes(void) {
  struct sysinfo si;
  if (sysinfo(&si)) return SIZE_MAX;
  unsigned long long total = ((unsigned long long)si.totalram + si.totalswap) * (si.mem_unit ? si.mem_unit : 1);
  return total < SIZE_MAX ? (size_t)total : SIZE_MAX;
}

/* Whether every dynamic dimension of b is set. */
static bool buf_dims_set(const tdsl_model *m, const RtBuf *b) {
  for (int k = 0; b->decl && k < b->rank; k++)
    if (b->decl[k] < 0 && !m->dims[-1 - b->decl[k]].set) return false;
  return true;
}

/* Reallocates dynamic buffer b for the current dimensions, initialized as tdsl_init
 * does (with its last seed): a tensor whose size is set anew starts over. A size of 0
 * (a dimension set to 0) still gets storage, one unused cell as a static empty tensor
 * has: data is a valid pointer, and "no storage" keeps meaning "not set". */
static int dyn_realloc(tdsl_model *m, RtBuf *b) {
  long size = dyn_size(m, b);
  for (int k = 0; k < b->rank; k++) b->dims[k] = b->decl[k] < 0 ? dim_value(m, -1 - b->decl[k]) : b->decl[k];
  drop_storage(m, b->data);
  b->data = NULL;
  b->size = 0;
  *b->slot = NULL; /* the model's code never sees freed storage */
  if (size > 0 || (size == 0 && buf_dims_set(m, b))) {
    size_t bytes = ((size_t)(size ? size : 1) * (b->elem == TDSL_F64 ? 8 : 4) + 63) & ~(size_t)63;
    if (bytes > memory_bytes() || !(b->data = storage_alloc(bytes)))
      return fail(m, "out of memory: tensor %s needs %ld elements (%zu bytes)", b->name, size, bytes);
    b->size = size;
  }
  *b->slot = b->data;
  if (m->cuda && adopt_err(m, tdsl_cuda_resize(m->cuda, (int)(b - m->bufs), b->data,
                                               (size_t)b->size * (b->elem == TDSL_F64 ? 8 : 4), m->err, sizeof m->err)))
    return -1;
  return init_buf(m, b, m->seed);
}

/* Some dim of b changed value or was set (before: every dim's dim_state before the
 * change: an unset dim set to 0 keeps the int 0 but needs storage). */
static bool dims_changed(const tdsl_model *m, const RtBuf *b, const long *before) {
  for (int k = 0; b->decl && k < b->rank; k++)
    if (b->decl[k] < 0 && dim_state(m, -1 - b->decl[k]) != before[-1 - b->decl[k]]) return true;
  return false;
}

/* Dynamic buffer b's dims or size are not those of the dimensions' current values. */
static bool dims_stale(const tdsl_model *m, const RtBuf *b) {
  for (int k = 0; b->decl && k < b->rank; k++)
    if (b->dims[k] != (b->decl[k] < 0 ? dim_value(m, -1 - b->decl[k]) : b->decl[k])) return true;
  return b->decl && (dyn_size(m, b) != b->size || !b->data != !buf_dims_set(m, b));
}

/* Setting a join: the message says what it is and names the dimensions to set. */
static int join_refused(tdsl_model *m, int id) {
  const RtNamed *d = &m->dims[id];
  char parts[256] = "";
  size_t len = 0;
  for (int k = 0; k < d->nparts && len < sizeof parts; k++) {
    const char *sep = !k ? "" : k == d->nparts - 1 ? " and " : ", ";
    int w = snprintf(parts + len, sizeof parts - len, "%s%s", sep, m->dims[d->parts[k]].name);
    if (w < 0) break;
    len += (size_t)w;
  }
  return fail(m, "dimension %s is a join (the largest of %s), computed from the dimensions it joins: set %s instead",
              d->name, parts, parts);
}

/* Every dimension's dim_state (malloc'd; NULL with the message when out of memory). */
static long *dim_states(tdsl_model *m) {
  long *st = malloc(sizeof(long) * (size_t)(m->ndims + 1));
  if (!st) fail(m, "out of memory");
  for (int i = 0; st && i < m->ndims; i++) st[i] = dim_state(m, i);
  return st;
}

/* Join id's state were the host's dimensions in the states st (-1: unset): set when all
 * its parts are, their broadcast: 0 when one is 0 (0 against 1 is 0; against a size
 * above 1 a check fails the call), else the largest. */
static long join_state(const tdsl_model *m, int id, const long *st) {
  const RtNamed *j = &m->dims[id];
  long big = 0;
  bool zero = false;
  for (int k = 0; k < j->nparts; k++) {
    long d = st[j->parts[k]];
    if (d < 0) return -1;
    zero = zero || !d;
    big = d > big ? d : big;
  }
  return zero ? 0 : big;
}

static void put_state(tdsl_model *m, int id, long v) {
  *(int *)m->dims[id].ptr = v < 0 ? 0 : (int)v;
  m->dims[id].set = v >= 0;
}

/* The host's dimensions in the states st (-1: unset, its int 0), then the joins and
 * flags that follow from them; nothing reallocated. */
static void dims_put(tdsl_model *m, const long *st) {
  for (int id = 0; id < m->nset; id++) put_state(m, id, st[id]);
  for (int id = m->nset; id < m->ndims; id++) put_state(m, id, join_state(m, id, st));
  for (int i = 0; i < m->nflags; i++) *m->flags[i].ptr = dim_value(m, m->flags[i].of) != 1;
}

/* Whether the tensors that the states `to` (from `before`) resize fit: no tensor too
 * large, all together within the machine's memory (each may fit alone, and with
 * overcommit the allocations succeed until the pages are touched). Changes nothing;
 * `what` names the change in the message. */
static int dims_admit(tdsl_model *m, const long *before, const long *to, const char *what) {
  dims_put(m, to);
  double total = 0;
  const char *big = NULL;
  for (int i = 0; i < m->nbufs && !big; i++) {
    const RtBuf *b = &m->bufs[i];
    long size = dims_changed(m, b, before) ? dyn_size(m, b) : 0;
    if (size < 0) big = b->name;
    total += (double)size * (b->elem == TDSL_F64 ? 8 : 4);
  }
  dims_put(m, before);
  if (big) return fail(m, "%s makes tensor %s too large", what, big);
  if (total > (double)memory_bytes())
    return fail(m, "%s: its tensors need %.0f bytes, more than the machine's memory", what, total);
  return 0;
}

/* Sets the host's dimensions to the states `to` as one change (tdsl_set_dim, a shape
 * setting several): refused as a whole before anything is reallocated (dims_admit), so
 * that a refused change leaves every dimension and tensor as it was. */
static int dims_change(tdsl_model *m, const long *to, const char *what) {
  long *before = dim_states(m);
  if (!before) return -1;
  int rc = dims_admit(m, before, to, what);
  if (!rc) {
    dims_put(m, to);
    for (int i = 0; i < m->nbufs && !rc; i++)
      if (dims_changed(m, &m->bufs[i], before)) rc = dyn_realloc(m, &m->bufs[i]);
  }
  if (rc) {
    /* An allocation failed: back to the old sizes (the tensors start over there, as
     * after any change), keeping the message, so that no tensor is left without
     * storage or at the refused size. */
    char msg[ERR_LEN];
    memcpy(msg, m->err, ERR_LEN);
    dims_put(m, before);
    for (int i = 0; i < m->nbufs; i++)
      if (dims_stale(m, &m->bufs[i])) dyn_realloc(m, &m->bufs[i]);
    fail(m, "%s", msg);
  }
  free(before);
  return rc;
}

/* dims_change to the states `to`, its messages naming the dimensions that change
 * ("dimension n = 5", "dimensions n = 5, k = 3"); 0 when none does. */
static int dims_apply(tdsl_model *m, const long *to) {
  char what[400];
  int len = 0, changed = 0;
  for (int id = 0; id < m->nset; id++) {
    if (to[id] == dim_state(m, id)) continue;
    int w = len < (int)sizeof what ? snprintf(what + len, sizeof what - (size_t)len, "%s%s = %ld", changed ? ", " : "",
                                              m->dims[id].name, to[id]) : 0;
    len += w > 0 ? w : 0;
    changed++;
  }
  if (!changed) return 0;
  char msg[ERR_LEN];
  snprintf(msg, sizeof msg, "dimension%s %s", changed > 1 ? "s" : "", what);
  return dims_change(m, to, msg);
}

static int set_dim_in(tdsl_model *m, const char *name, long v) {
  if (need(m, "tdsl_set_dim", "name", name)) return -1;
  int id = find_dim(m, name);
  if (id < 0) return fail(m, "no dynamic dimension named '%s'", name);
  if (id >= m->nset) return join_refused(m, id);
  if (v < 0 || v > INT_MAX) return fail(m, "dimension %s = %ld is out of its range 0..%d", name, v, INT_MAX);
  if (dim_state(m, id) == v) return 0; /* the tensors keep their values */
  long *to = dim_states(m);
  if (!to) return -1;
  to[id] = v;
  int rc = dims_apply(m, to);
  free(to);
  return rc;
}

int tdsl_set_dim(tdsl_model *m, const char *name, long v) {
  if (!enter(m)) return -1;
  int rc = set_dim_in(m, name, v);
  leave(m);
  return rc;
}

static long check_value(const tdsl_model *m, int d) { return d < 0 ? dim_value(m, -1 - d) : d; }

/* Fails the call when a dynamic dimension is still unset or a check of the sizes
 * (shape inference's, recorded in the model) does not hold. */
static int dims_set(tdsl_model *m, const char *routine) {
  for (int i = 0; i < m->ndims; i++)
    if (!m->dims[i].set && !m->dims[i].unused) return fail(m, "%s: dimension %s is not set (tdsl_set_dim or tdslc --set %s=N, or write a tensor of that shape)", routine, m->dims[i].name, m->dims[i].name);
  for (int i = 0; i < m->nbufs; i++) /* a failed allocation (tdsl_set_dim said so) */
    if (m->bufs[i].decl && !m->bufs[i].data)
      return fail(m, "%s: tensor %s has no storage (its dimensions were too large)", routine, m->bufs[i].name);
  for (int i = 0; i < m->nchecks; i++) {
    const struct RtCheck *c = &m->checks[i];
    long size = check_value(m, c->size), expect = check_value(m, c->expect);
    if (size == expect || (c->or_one && size == 1)) continue;
    const char *sn = c->size < 0 ? m->dims[-1 - c->size].name : "size";
    if (c->expect < 0)
      return fail(m, "%s: %.300s (%s = %ld, %s = %ld)", routine, c->msg, sn, size, m->dims[-1 - c->expect].name, expect);
    return fail(m, "%s: %.300s (%s = %ld, expected %ld%s)", routine, c->msg, sn, size, expect, c->or_one ? " or 1" : "");
  }
  /* tdsl_set_index checked the value against the dimension then; the dimension may have
   * shrunk since, and the code indexes with the value unchecked. */
  for (int i = 0; i < m->nsyms; i++) {
    int r = m->sym_range[i], v = *(int *)m->syms[i].ptr;
    if (r < 0 && !dim_value(m, -1 - r)) /* as a static `index 0`, an error: no value is in range */
      return fail(m, "%s: index %s ranges over dimension %s = 0: no value is in its range", routine, m->syms[i].name,
                  m->dims[-1 - r].name);
    if (r < 0 && v >= dim_value(m, -1 - r))
      return fail(m, "%s: index %s = %d is out of its range 0..%d (dimension %s changed after it was set)", routine,
                  m->syms[i].name, v, dim_value(m, -1 - r) - 1, m->dims[-1 - r].name);
  }
  return 0;
}

/* The dynamic dimensions of b from a shape (after checking it against b's dims). */
static int dims_take(tdsl_model *m, RtBuf *b, int rank, const long *dims);

/* "(2, 3)" into buf; at most n bytes, "...)" when cut. */
static void shape_str(char *buf, size_t n, const long *dims, int rank) {
  size_t len = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < rank && len + 24 < n; i++) len += (size_t)snprintf(buf + len, n - len, "%s%ld", i ? ", " : "", dims[i]);
  snprintf(buf + len, n - len, "%s)", len + 24 < n ? "" : "...");
}

/* Whether dims (b->rank of them) fit b's declared dims as they are: static ones equal,
 * an axis repeating a dimension of the same size. */
static bool shape_fits(const RtBuf *b, const long *dims) {
  for (int k = 0; k < b->rank; k++) {
    int decl = b->decl[k];
    if (decl >= 0 && dims[k] != decl) return false;
    for (int j = 0; j < k; j++)
      if (decl < 0 && b->decl[j] == decl && dims[j] != dims[k]) return false;
  }
  return true;
}

/* A shape that differs from b's dims by axes of size 1 ((n,) for a tensor [n; 1], (n, 1)
 * for [n]), as tdsl_load_file accepts for a static tensor: the shape's axes of size
 * other than 1 pair in order with b's axes, each static axis other than 1 among them;
 * the unpaired axes of b are 1. Fills out (b->rank dims) when exactly one pairing
 * exists; returns the number of pairings, counted up to 2 (an ambiguous one: (5,) for
 * [n; m] is n = 5 or m = 5). Counting by the pairing, not the values: a dynamic axis
 * paired takes a size other than 1, an unpaired one 1, so two pairings give two shapes.
 * O(rank * b->rank): ways[i][j] counts the pairings of the shape's axes i.. with b's j.. */
static int align_ones(tdsl_model *m, const RtBuf *b, int rank, const long *dims, long *out) {
  int R = b->rank, n = 0;
  for (int k = 0; k < rank; k++) n += dims[k] != 1;
  if (n > R) return 0;
  long *f = malloc(sizeof(long) * (size_t)(n + 1));
  unsigned char *ways = malloc((size_t)(n + 1) * (size_t)(R + 1));
  if (!f || !ways) {
    free(f), free(ways);
    fail(m, "out of memory");
    return -1;
  }
  n = 0;
  for (int k = 0; k < rank; k++)
    if (dims[k] != 1) f[n++] = dims[k];
#define WAYS(i, j) ways[(size_t)(i) * (size_t)(R + 1) + (size_t)(j)]
  for (int i = n; i >= 0; i--)
    for (int j = R; j >= 0; j--) {
      int w = 0;
      if (j == R) w = i == n;
      else {
        int d = b->decl[j];
        if (d < 0 || d == 1) w += WAYS(i, j + 1); /* axis j unpaired: 1 */
        if (i < n && (d < 0 || d == f[i])) w += WAYS(i + 1, j + 1);
      }
      WAYS(i, j) = (unsigned char)(w > 2 ? 2 : w);
    }
  int count = WAYS(0, 0);
  for (int i = 0, j = 0; count == 1 && j < R; j++) { /* the one pairing */
    int d = b->decl[j];
    if (i < n && (d < 0 || d == f[i]) && WAYS(i + 1, j + 1)) out[j] = f[i++];
    else out[j] = 1;
  }
#undef WAYS
  free(f), free(ways);
  return count;
}

static int dims_from_shape(tdsl_model *m, RtBuf *b, int rank, const long *dims) {
  long *aligned = NULL;
  if (b->decl && (rank != b->rank || !shape_fits(b, dims))) {
    if (!(aligned = malloc(sizeof(long) * (size_t)(b->rank + 1)))) return fail(m, "out of memory");
    int ways = align_ones(m, b, rank, dims, aligned);
    if (ways == 1) {
      dims = aligned;
      rank = b->rank;
    } else if (ways < 0 || ways > 1 || rank != b->rank) {
      free(aligned);
      if (ways < 0) return -1;
      char have[256], want[256];
      shape_str(have, sizeof have, dims, rank);
      want[0] = '(';
      for (int k = 0, len = 1; k < b->rank && len + 24 < (int)sizeof want; k++) {
        int d = b->decl[k];
        len += snprintf(want + len, sizeof want - (size_t)len, "%s", k ? ", " : "");
        len += d >= 0 ? snprintf(want + len, sizeof want - (size_t)len, "%d", d)
                      : snprintf(want + len, sizeof want - (size_t)len, "%.40s", m->dims[-1 - d].name);
        if (k == b->rank - 1) snprintf(want + len, sizeof want - (size_t)len, ")");
      }
      if (!b->rank) snprintf(want, sizeof want, "()");
      if (ways > 1)
        return fail(m, "tensor %s: the shape %s fits its dims %s in more than one way up to axes of size 1 (give the shape "
                       "all %d axes)", b->name, have, want, b->rank);
      return fail(m, "tensor %s has dims %s, not %s (even up to axes of size 1)", b->name, want, have);
    } else {
      free(aligned); /* same rank, no pairing: the axis that differs says it best */
      aligned = NULL;
    }
  }
  if (rank != b->rank) return fail(m, "tensor %s has rank %d, not %d", b->name, b->rank, rank);
  int rc = dims_take(m, b, rank, dims);
  free(aligned);
  return rc;
}

static int dims_take(tdsl_model *m, RtBuf *b, int rank, const long *dims) {
  for (int k = 0; k < rank; k++) {
    int decl = b->decl ? b->decl[k] : b->dims[k];
    if (decl >= 0 && dims[k] != decl)
      return fail(m, "tensor %s: axis %d has size %d, not %ld", b->name, k, decl, dims[k]);
    for (int j = 0; j < k; j++)
      if (decl < 0 && b->decl[j] == decl && dims[j] != dims[k])
        return fail(m, "tensor %s: axes %d and %d are both dimension %s but have sizes %ld and %ld", b->name, j, k,
                    m->dims[-1 - decl].name, dims[j], dims[k]);
  }
  if (!b->decl) return 0;
  /* every dimension the shape gives is checked, and the change admitted, before one is
   * set: a refused shape leaves the model as it was */
  long *to = dim_states(m);
  if (!to) return -1;
  int rc = 0;
  for (int k = 0; k < rank && !rc; k++) {
    int id = -1 - b->decl[k];
    if (b->decl[k] >= 0 || id >= m->nset) continue;
    if (dims[k] < 0 || dims[k] > INT_MAX)
      rc = fail(m, "dimension %s = %ld is out of its range 0..%d", m->dims[id].name, dims[k], INT_MAX);
    to[id] = dims[k];
  }
  for (int k = 0; k < rank && !rc; k++) { /* a join follows the dims it joins: it must agree */
    int id = -1 - b->decl[k];
    if (b->decl[k] >= 0 || id < m->nset) continue;
    long j = join_state(m, id, to);
    j = j < 0 ? 0 : j; /* its int while a part is unset */
    if (dims[k] != j)
      rc = fail(m, "tensor %s: axis %d is dimension %s = %ld, not %ld (set the dimensions it joins)", b->name, k,
                m->dims[id].name, j, dims[k]);
  }
  if (!rc) rc = dims_apply(m, to);
  free(to);
  return rc;
}

long *tdsl_rt_want_new(tdsl_model *m) {
  long *w = malloc(sizeof(long) * (size_t)(m->ndims + 1));
  if (!w) fail(m, "out of memory");
  for (int i = 0; w && i <= m->ndims; i++) w[i] = -1;
  return w;
}

/* Whether name is in a comma-separated list ("*": every name). */
static bool in_list(const char *list, const char *name) {
  if (!list) return false;
  if (!strcmp(list, "*")) return true;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return true;
    p += len + (e != NULL);
  }
  return false;
}

int tdsl_rt_want_shape(tdsl_model *m, long *want, const char *where, const char *name, int rank, const long *dims,
                       const char *unset) {
  int i = tdsl_rt_find_saved(m, name);
  const RtBuf *b = i >= 0 ? &m->bufs[i] : NULL;
  for (int k = 0; b && b->decl && rank == b->rank && k < rank; k++) {
    int id = -1 - b->decl[k];
    if (b->decl[k] >= 0 || want[id] == dims[k]) continue;
    /* an unset dimension saves as 0, as does a join of one; a join is never listed */
    bool some_unset = unset && *unset;
    if (!dims[k] && (in_list(unset, m->dims[id].name) || (id >= m->nset && some_unset))) continue;
    if (want[id] >= 0)
      return fail(m, "%s: tensor '%s' has %s = %ld where an earlier tensor has %s = %ld", where, name, m->dims[id].name,
                  dims[k], m->dims[id].name, want[id]);
    want[id] = dims[k];
  }
  return 0;
}

int tdsl_rt_want_apply(tdsl_model *m, const long *want, const char *where) {
  for (int id = 0; id < m->nset; id++) {
    long cur = dim_state(m, id);
    if (want[id] < 0 || want[id] == cur) continue;
    if (cur >= 0)
      return fail(m, "%s: its tensors have %s = %ld, but %s is set to %ld (set it to %ld first, or load into a model where it is unset)",
                  where, m->dims[id].name, want[id], m->dims[id].name, cur, want[id]);
  }
  long *to = dim_states(m);
  if (!to) return -1;
  for (int id = 0; id < m->nset; id++)
    if (want[id] >= 0 && !m->dims[id].set) to[id] = want[id];
  int rc = 0;
  for (int id = m->nset; id < m->ndims && !rc; id++) {
    long j = join_state(m, id, to);
    j = j < 0 ? 0 : j; /* its int while a part is unset */
    if (want[id] >= 0 && want[id] != j)
      rc = fail(m, "%s: its tensors have %s = %ld, but the dimensions it joins make it %ld", where, m->dims[id].name,
                want[id], j);
  }
  if (!rc) rc = dims_apply(m, to);
  free(to);
  return rc;
}

long *tdsl_rt_dims_now(tdsl_model *m) { return dim_states(m); }

void tdsl_rt_dims_restore(tdsl_model *m, const long *before) {
  char msg[ERR_LEN];
  memcpy(msg, m->err, ERR_LEN);
  dims_put(m, before);
  for (int i = 0; i < m->nbufs; i++)
    if (dims_stale(m, &m->bufs[i])) dyn_realloc(m, &m->bufs[i]);
  fail(m, "%s", msg);
}

int tdsl_rt_take_shape(tdsl_model *m, const char *name, int rank, const long *dims) {
  RtBuf *b = lookup(m, name);
  if (!b) return -1;
  return b->decl ? dims_from_shape(m, b, rank, dims) : 0;
}

static int write_shaped(tdsl_model *m, const char *fn, const char *name, const float *src, const double *src64, int rank,
                        const long *dims) {
  if (need(m, fn, "name", name)) return -1;
  if (rank < 0 || (rank > 0 && !dims)) return fail(m, "%s: %s", fn, rank < 0 ? "negative rank" : "NULL dims pointer");
  /* before the shape sets any dimension: a refused write changes nothing */
  if (!src && !src64) {
    long n = 1;
    for (int k = 0; k < rank && n; k++) n = dims[k] == 0 ? 0 : 1;
    if (n) return fail(m, "%s: NULL data pointer", fn);
  }
  RtBuf *b = lookup(m, name);
  if (!b || dims_from_shape(m, b, rank, dims)) return -1;
  return src64 ? write_f64_in(m, name, src64, b->size) : write_in(m, name, src, b->size);
}

int tdsl_write_shaped(tdsl_model *m, const char *name, const float *src, int rank, const long *dims) {
  if (!enter(m)) return -1;
  int rc = write_shaped(m, "tdsl_write_shaped", name, src, NULL, rank, dims);
  leave(m);
  return rc;
}

int tdsl_write_shaped_f64(tdsl_model *m, const char *name, const double *src, int rank, const long *dims) {
  if (!enter(m)) return -1;
  int rc = write_shaped(m, "tdsl_write_shaped_f64", name, NULL, src, rank, dims);
  leave(m);
  return rc;
}
