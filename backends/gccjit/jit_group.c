/* jit_group.c: the split compile (jit.h, JitPlan): which functions go together, what a
 * group's object depends on (its cache key), compiling one group, and the symbols the
 * linked output keeps.
 *
 * Every compiled function is NAME_fn_N in every group (exported by the group that
 * defines it, imported by the groups that call it), so the groups link by name and the
 * link then hides all but the model's interface. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jit_emit.h"

/* Group sizes in IR statements. A group is cut after function f with probability
 * size(f) / GROUP_TARGET, decided by a hash of f's name: the decision depends on f
 * alone, so after an edit the cuts fall where they fell before from the first cut past
 * the edit on. Also: no cut below GROUP_MIN, always one at GROUP_MAX (past a twin, see
 * plan_order). Each group costs a process, gcc's start-up and an assembler run (~10
 * ms): at 120 the 50-layer MLP's cold compile took 8% less CPU, and editing one layer's
 * width recompiled 27% of it instead of 11% (with the twins and one class, below). */
enum { GROUP_TARGET = 60, GROUP_MIN = 20, GROUP_MAX = 200 };
/* A store running fewer times than this per call is glue, unless it reduces. (At 64
 * instead, a 50-layer width-16 MLP compiled 12% more slowly and stepped 2% faster.) */
enum { GLUE_ITERS = 4096 };
/* Glue is compiled at -O2 at most (-O3's unrolling and versioning of its many small
 * loops cost compile time for nothing); below -O3 nothing is set apart as glue. At -O1
 * (with -ftree-vectorize) the glue made a 50-layer MLP's step 7% slower than the one-
 * context compile, for 2% less compile time (bench/split_speed.py). */
enum { GLUE_MAX_O = 2 };

static long stmts_size(const PtrVec *body) {
  long n = 0;
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    n += s->kind == S_KERNEL ? 40 : s->kind == S_COMMENT ? 0 : 1;
    n += stmts_size(&s->body);
  }
  return n;
}

static bool aff_uses(const Aff *f, int var) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var == var && f->t[i].coef) return true;
  return false;
}

/* Does body hold work worth the configured -O: a contraction (a store that leaves out
 * an enclosing loop's variable, a schedule kernel or reduction) or a nest of at least
 * GLUE_ITERS iterations? vars[0..depth) are the enclosing loops' variables. */
static bool is_hot(const PtrVec *body, long iters, int *vars, int depth) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_KERNEL || (s->kind == S_LOOP && s->accs > 1)) return true;
    if (s->kind == S_STORE) {
      if (iters >= GLUE_ITERS) return true;
      for (int d = 0; d < depth; d++)
        if (s->accum != OP_ARG2 && !aff_uses(&s->dst.flat, vars[d])) return true;
    }
    if (s->kind == S_LOOP && depth < 64) {
      vars[depth] = s->var;
      if (is_hot(&s->body, mul_sat(iters, s->ext > 0 ? s->ext : 1), vars, depth + 1)) return true;
    } else if (s->kind == S_IF && is_hot(&s->body, iters, vars, depth)) return true;
  }
  return false;
}

static unsigned name_hash(const char *s) {
  unsigned h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* The functions in IR order, each twin (IrFunc.twin) right after the first of the two:
 * a tensor's forward and backprop code, which an edit of it changes together, end up in
 * one group. */
static int *plan_order(Arena *a, const IrModule *m) {
  int n = 0, *order = ANEWN(a, int, m->funcs.len + 1);
  bool *placed = ANEWN(a, bool, m->funcs.len + 1);
  for (int i = 0; i < m->funcs.len; i++) {
    if (placed[i]) continue;
    placed[order[n++] = i] = true;
    int t = VEC_AT(m->funcs, IrFunc, i)->twin - 1;
    if (t >= 0 && t < m->funcs.len && !placed[t]) placed[order[n++] = t] = true;
  }
  return order;
}

/* Cuts the functions of one class (want: hot or not; hot NULL: all), in plan order,
 * into groups. */
static void cut_groups(JitPlan *p, const int *order, const long *fsize, const bool *hot, bool want, int level) {
  const IrModule *m = p->m;
  int open = -1;
  for (int k = 0; k < m->funcs.len; k++) {
    int i = order[k];
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (f->seq || (hot && hot[i] != want)) continue;
    if (open < 0) {
      open = p->ngroups++;
      p->size[open] = 0;
      p->level[open] = level;
      p->first[open] = i;
    }
    p->group[i] = open;
    p->size[open] += fsize[i];
    if (k + 1 < m->funcs.len && order[k + 1] == f->twin - 1) continue; /* never between twins */
    bool cut = (long)(name_hash(f->name) % 1024) * GROUP_TARGET < fsize[i] * 1024;
    if (p->size[open] >= GROUP_MAX || (p->size[open] >= GROUP_MIN && cut)) open = -1;
  }
}

typedef struct Uses {
  bool *buf, *sym, *fn;
} Uses;
static Uses group_uses(Arena *a, const JitPlan *p, int g);

/* Buffers further apart than this (in IR order, which is the layout's) go to different
 * clusters of a group's storage: whatever lies between them may change size. A group's
 * functions touch a few layers' buffers and, in an optimizer step, their update
 * temporaries far away: large enough to keep the first together, as gcc cannot tell
 * clusters apart (a loop across two vectorizes behind a run-time alias check), small
 * enough that a cluster rarely spans an edited layer. The 200-layer MLP's step ran at
 * 0.935 of one context's speed with 8, 0.967 with 64, 0.986 with 256; but with 256
 * editing one layer of a 30-layer MLP recompiled 559 of 2207 statements, with 64 372. */
enum { CLUSTER_GAP = 64 };

/* Group g's storage in clusters of nearby buffers (and one of the symbols), each at a
 * base offset of its own: the offset of its first buffer (a multiple of 64). */
static JitStore cluster(Arena *a, const JitPlan *p, const IrLayout *l, int g) {
  const IrModule *m = p->m;
  Uses u = group_uses(a, p, g);
  JitStore st = {.base = ANEWN(a, long, m->bufs.len + 2), .buf = ANEWN(a, int, m->bufs.len + 1),
                 .sym = ANEWN(a, int, m->syms.len + 1)};
  int last = -1;
  for (int b = 0; b < m->bufs.len; b++) {
    st.buf[b] = -1;
    if (!u.buf[b]) continue;
    if (last < 0 || b - last > CLUSTER_GAP) st.base[st.n++] = l->buf_off[b];
    st.buf[b] = st.n - 1;
    last = b;
  }
  int syms = -1;
  for (int s = 0; s < m->syms.len; s++) {
    st.sym[s] = -1;
    if (!u.sym[s]) continue;
    if (syms < 0) st.base[syms = st.n++] = l->sym_off[s] & ~63L;
    st.sym[s] = syms;
  }
  return st;
}

static void set_stores(Arena *a, JitPlan *p) {
  IrLayout l = ir_layout(a, p->m);
  p->store = ANEWN(a, JitStore, p->ngroups + 1);
  for (int g = JIT_GLUE_GROUPS; g < p->ngroups; g++) p->store[g] = cluster(a, p, &l, g);
}

JitPlan *jit_plan(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch) {
  JitPlan *p = ANEW(a, JitPlan);
  p->m = jit_prepare(a, m, o, with_arch);
  p->with_arch = with_arch;
  m = p->m;
  int nf = m->funcs.len;
  p->group = ANEWN(a, int, nf + 1);
  p->size = ANEWN(a, long, nf + 2);
  p->level = ANEWN(a, int, nf + 2);
  p->first = ANEWN(a, int, nf + 2);
  long *fsize = ANEWN(a, long, nf + 1);
  bool *hot = ANEWN(a, bool, nf + 1);
  int vars[64];
  for (int i = 0; i < nf; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    p->group[i] = -1;
    fsize[i] = stmts_size(&f->body) + 1;
    if (!f->seq) p->total += fsize[i];
    hot[i] = is_hot(&f->body, 1, vars, 0);
  }
  p->ngroups = JIT_GLUE_GROUPS;
  p->level[JIT_GROUP_META] = p->level[JIT_GROUP_CALL] = o->opt_level < 1 ? o->opt_level : 1;
  p->size[JIT_GROUP_META] = 1;
  p->size[JIT_GROUP_CALL] = nf; /* a switch case per function */
  int *order = plan_order(a, m);
  int glue = o->opt_level < GLUE_MAX_O ? o->opt_level : GLUE_MAX_O;
  if (glue == o->opt_level) cut_groups(p, order, fsize, NULL, true, glue);
  else {
    cut_groups(p, order, fsize, hot, true, o->opt_level);
    cut_groups(p, order, fsize, hot, false, glue);
  }
  set_stores(a, p);
  return p;
}

/* ---- keys ---- */

static void aff_syms(const Aff *f, Uses *u);

static void expr_uses(const IrExpr *e, Uses *u) {
  if (!e) return;
  if (e->kind == X_LOAD) {
    u->buf[e->acc.buf] = true;
    aff_syms(&e->acc.flat, u);
  }
  if (e->kind == X_SYM) u->sym[e->sym] = true;
  for (int k = 0; k < 3; k++) expr_uses(e->a[k], u);
}

static void aff_syms(const Aff *f, Uses *u) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].var < 0) u->sym[-1 - f->t[i].var] = true;
}

static void stmts_uses(const PtrVec *body, Uses *u, FILE *what) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    const Stmt *st = s->kind == S_KERNEL ? s->kern->store : s;
    if (st->kind == S_STORE) {
      u->buf[st->dst.buf] = true;
      aff_syms(&st->dst.flat, u);
      expr_uses(st->val, u);
      if (what && st->what) fprintf(what, "what %s\n", st->what); /* --check-bounds messages */
    }
    if (s->kind == S_FILL) u->buf[s->buf] = true;
    if (s->kind == S_PREFETCH) u->buf[s->dst.buf] = true;
    for (int c = 0; s->kind == S_CALL && c < s->ncalls; c++) u->fn[s->callee + c] = true;
    if (s->kind == S_KERNEL) stmts_uses(&s->kern->epilogue, u, what);
    for (int g = 0; g < s->nguards; g++) aff_syms(&s->guards[g].aff, u);
    stmts_uses(&s->body, u, what);
  }
}

/* Function i's IR without comments, which name source lines: moving code in the file
 * leaves the object unchanged (--check-bounds messages are keyed separately). */
static void func_text(FILE *out, const IrModule *m, int i) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return;
  ir_print_func(f, m, i);
  fclose(f);
  for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    size_t ind = strspn(line, " ");
    if (line[ind] != '#') fprintf(out, "%.*s\n", (int)n, line);
  }
  free(buf);
}

/* The name of the base offset of group g's cluster c, a global the meta group defines. */
static const char *base_name(Arena *a, const JitPlan *p, const JitOpts *o, int g, int c) {
  return arena_printf(a, "%s_base_%d_%d", jit_name(o->name), p->first[g], c);
}

static const char *glue_key(Arena *a, const JitPlan *p, const JitOpts *o, int g, bool object) {
  const IrModule *m = p->m;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fprintf(f, "glue %d O%d object %d name %s\n", g, p->level[g], object, jit_name(o->name));
  if (g == JIT_GROUP_META) {
    fputs(ir_metadata(a, m, jit_name(o->name)), f);
    for (int k = JIT_GLUE_GROUPS; k < p->ngroups; k++)
      for (int c = 0; c < p->store[k].n; c++) fprintf(f, "base %s %ld\n", base_name(a, p, o, k, c), p->store[k].base[c]);
  } else
    for (int i = 0; i < m->funcs.len; i++) {
      const IrFunc *fn = VEC_AT(m->funcs, IrFunc, i);
      for (int k = 0; fn->seq && k < fn->body.len; k++) { /* the dispatcher's cases: the seq routines' callees */
        const Stmt *s = fn->body.items[k];
        fprintf(f, "case %d-%d\n", s->callee, s->callee + s->ncalls - 1);
      }
    }
  fclose(f);
  char *key = arena_strdup(a, buf);
  free(buf);
  return key;
}

const char *jit_group_key(Arena *a, const JitPlan *p, const JitOpts *o, int g, bool object) {
  if (g < JIT_GLUE_GROUPS) return glue_key(a, p, o, g, object);
  const IrModule *m = p->m;
  Uses u = {ANEWN(a, bool, m->bufs.len + 1), ANEWN(a, bool, m->syms.len + 1), ANEWN(a, bool, m->funcs.len + 1)};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  /* offsets relative to the clusters' bases: storage elsewhere may move */
  const JitStore *st = &p->store[g];
  fprintf(f, "group O%d name %s first %d\n", p->level[g], jit_name(o->name), p->first[g]);
  for (int i = 0; i < m->funcs.len; i++)
    if (p->group[i] == g) {
      fprintf(f, "fn %d\n", i);
      func_text(f, m, i);
      stmts_uses(&VEC_AT(m->funcs, IrFunc, i)->body, &u, o->check_bounds ? f : NULL);
    }
  IrLayout l = ir_layout(a, m);
  for (int b = 0; b < m->bufs.len; b++)
    if (u.buf[b]) {
      const IrBuf *ib = VEC_AT(m->bufs, IrBuf, b);
      fprintf(f, "buf %d %s %d %ld at %d+%ld:", b, ib->name, (int)ib->elem, ib->size, st->buf[b], l.buf_off[b] - st->base[st->buf[b]]);
      for (int d = 0; d < ib->rank; d++) fprintf(f, " %d", ib->dims[d]);
      fputc('\n', f);
    }
  for (int s = 0; s < m->syms.len; s++)
    if (u.sym[s]) fprintf(f, "sym %d %s at %d+%ld\n", s, VEC_AT(m->syms, IrSym, s)->name, st->sym[s], l.sym_off[s] - st->base[st->sym[s]]);
  for (int i = 0; i < m->funcs.len; i++)
    if (u.fn[i]) fprintf(f, "calls %d\n", i);
  fclose(f);
  char *key = arena_strdup(a, buf);
  free(buf);
  return key;
}

/* ---- compiling one group ---- */

/* A base offset's global: const long long[1] (libgccjit initializes only arrays, and
 * with long its size check fails). Const: stores into buffers cannot change it, so gcc
 * loads it once, not after every store. */
static gcc_jit_type *base_type(J *j) {
  gcc_jit_type *ll = gcc_jit_type_get_const(gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_LONG_LONG));
  return gcc_jit_context_new_array_type(j->c, NULL, ll, 1);
}

/* The metadata and every group's base offsets. */
static void meta(J *j, const JitPlan *p, bool object) {
  const char *name = jit_name(j->o->name);
  jit_export_meta(j->a, j->c, name, ir_metadata(j->a, p->m, name), object);
  for (int g = JIT_GLUE_GROUPS; g < p->ngroups; g++)
    for (int c = 0; c < p->store[g].n; c++) {
      gcc_jit_lvalue *v = gcc_jit_context_new_global(j->c, NULL, GCC_JIT_GLOBAL_EXPORTED, base_type(j), base_name(j->a, p, j->o, g, c));
      long long base = p->store[g].base[c];
      gcc_jit_global_set_initializer(v, &base, sizeof base);
    }
}

static void dispatch(J *j, const JitPlan *p) {
  const IrModule *m = p->m;
  for (int i = 0; i < m->funcs.len; i++)
    if (p->group[i] >= 0) jit_declare_func(j, i, GCC_JIT_FUNCTION_IMPORTED);
  jit_export_dispatch(j->a, j->c, m, jit_name(j->o->name), &j->inst, j->funcs);
}

static Uses group_uses(Arena *a, const JitPlan *p, int g) {
  const IrModule *m = p->m;
  Uses u = {ANEWN(a, bool, m->bufs.len + 1), ANEWN(a, bool, m->syms.len + 1), ANEWN(a, bool, m->funcs.len + 1)};
  for (int i = 0; i < m->funcs.len; i++)
    if (p->group[i] == g) stmts_uses(&VEC_AT(m->funcs, IrFunc, i)->body, &u, NULL);
  return u;
}

static void group(J *j, const JitPlan *p, int g, const Uses *up) {
  const IrModule *m = p->m;
  Uses u = *up;
  const JitStore *st = &p->store[g];
  j->store = st;
  /* Buffers in different clusters may alias as far as gcc knows: the cheap cost model
   * lets the vectorizer check that at run time (very-cheap, -O2's, gives up). */
  if (st->n > 1) gcc_jit_context_add_command_line_option(j->c, "-fvect-cost-model=cheap");

  j->parts = ANEWN(j->a, JitInstance, st->n + 1);
  j->base_offs = ANEWN(j->a, gcc_jit_lvalue *, st->n + 1);
  bool *bufs = ANEWN(j->a, bool, m->bufs.len + 1), *syms = ANEWN(j->a, bool, m->syms.len + 1);
  for (int c = 0; c < st->n; c++) {
    for (int b = 0; b < m->bufs.len; b++) bufs[b] = st->buf[b] == c;
    for (int s = 0; s < m->syms.len; s++) syms[s] = st->sym[s] == c;
    j->parts[c] = jit_instance_part(j->a, j->c, m, bufs, syms, st->base[c]);
    gcc_jit_lvalue *v = gcc_jit_context_new_global(j->c, NULL, GCC_JIT_GLOBAL_IMPORTED, base_type(j), base_name(j->a, p, j->o, g, c));
    j->base_offs[c] = gcc_jit_context_new_array_access(j->c, NULL, gcc_jit_lvalue_as_rvalue(v), gcc_jit_context_zero(j->c, j->t_int));
  }
  for (int i = 0; i < m->funcs.len; i++)
    if (p->group[i] == g) jit_declare_func(j, i, GCC_JIT_FUNCTION_EXPORTED);
  for (int i = 0; i < m->funcs.len; i++)
    if (u.fn[i] && p->group[i] != g) jit_declare_func(j, i, GCC_JIT_FUNCTION_IMPORTED);
  for (int i = 0; i < m->funcs.len; i++)
    if (p->group[i] == g) jit_define_func(j, i);
}

/* Group g for the host's -march (with_arch) or the generic target; report: print
 * libgccjit's error. */
static bool compile_group(Arena *a, const JitPlan *p, const JitOpts *o, int g, bool object, const char *path, bool with_arch,
                          bool report) {
  J *j = jit_begin(a, p->m, o, with_arch, p->level[g], false);
  /* glue below the configured level keeps the vectorizer: -O1 alone made the small
   * pointwise nests scalar and a 50-layer MLP's step 2x slower */
  if (g == JIT_GROUP_META) meta(j, p, object);
  else if (g == JIT_GROUP_CALL) dispatch(j, p);
  else {
    Uses u = group_uses(a, p, g);
    group(j, p, g, &u);
  }
  gcc_jit_context_compile_to_file(j->c, GCC_JIT_OUTPUT_KIND_OBJECT_FILE, path);
  bool ok = !gcc_jit_context_get_first_error(j->c) || (report && jit_report_failure(j->c, "code generation"));
  gcc_jit_context_release(j->c);
  return ok;
}

/* An -march the embedded gcc does not know (a host newer than libgccjit) fails the
 * group: it is compiled again for the generic target, as jit_compile_file does (its IR,
 * scheduled for the host's vector width, is correct on any x86-64). The cache key names
 * the -march, and the outcome is the same every time for it. The first attempt's
 * messages (gcc's own diagnostics and the assembler's, on stderr) are dropped: a real
 * error shows in the second. (A worker process runs this: its stderr is its own.) */
bool jit_compile_group(Arena *a, const JitPlan *p, const JitOpts *o, int g, bool object, const char *path) {
  if (!p->with_arch) return compile_group(a, p, o, g, object, path, false, true);
  fflush(stderr);
  int saved = dup(2), null = open("/dev/null", O_WRONLY);
  if (saved >= 0 && null >= 0) dup2(null, 2);
  bool ok = compile_group(a, p, o, g, object, path, true, false);
  fflush(stderr);
  if (saved >= 0 && null >= 0) dup2(saved, 2);
  if (saved >= 0) close(saved);
  if (null >= 0) close(null);
  return ok || compile_group(a, p, o, g, object, path, false, true);
}

const char **jit_exports(Arena *a, const JitPlan *p, const JitOpts *o, bool object) {
  const IrModule *m = p->m;
  const char *name = jit_name(o->name);
  const char **s = ANEWN(a, const char *, m->funcs.len + 8);
  int n = 0;
  s[n++] = arena_printf(a, "%s_call", name);
  s[n++] = arena_printf(a, "%s_model_meta", name);
  if (!object && strcmp(name, "tdsl")) s[n++] = "tdsl_model_meta";
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (f->exported && !f->seq) s[n++] = arena_printf(a, "%s_fn_%d", name, i);
  }
  s[n] = NULL;
  return s;
}

/* ---- linking the groups ---- */

/* Runs argv (searched in PATH); false after printing an error. */
static bool spawn(char *const *argv) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[0], argv);
    fprintf(stderr, "tdslc: error: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) < 0) {
    fprintf(stderr, "tdslc: error: cannot run '%s': %s\n", argv[0], strerror(errno));
    return false;
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 127) fprintf(stderr, "tdslc: error: '%s' failed while linking the model\n", argv[0]);
  return false;
}

/* A shared library: linked by libgccjit's own driver (an empty context whose driver
 * options name the objects), so the toolchain is the one that compiled them; a version
 * script keeps only the model's interface. */
static bool link_shared(Arena *a, const char **exports, const char *const *objs, int n, const char *dir, const char *out) {
  const char *ver = arena_printf(a, "%s/exports.ver", dir);
  FILE *f = fopen(ver, "w");
  if (!f) return false;
  fputs("{ global:", f);
  for (int i = 0; exports[i]; i++) fprintf(f, " %s;", exports[i]);
  fputs(" local: *; };\n", f);
  bool ok = fclose(f) == 0;
  gcc_jit_context *c = jit_context_acquire();
  for (int i = 0; i < n; i++) gcc_jit_context_add_driver_option(c, objs[i]);
  gcc_jit_context_add_driver_option(c, arena_printf(a, "-Wl,--version-script=%s", ver));
  gcc_jit_context_add_driver_option(c, "-lm");
  if (!ok) fprintf(stderr, "tdslc: error: cannot write '%s'\n", ver);
  else {
    gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, out);
    ok = !gcc_jit_context_get_first_error(c) || jit_report_failure(c, "linking the model");
  }
  gcc_jit_context_release(c);
  unlink(ver);
  return ok;
}

/* An object file: ld -r of the groups, then every global but the interface local. */
static bool link_object(Arena *a, const char **exports, const char *const *objs, int n, const char *dir, const char *out) {
  const char *keep = arena_printf(a, "%s/exports.txt", dir);
  FILE *f = fopen(keep, "w");
  if (!f) return false;
  for (int i = 0; exports[i]; i++) fprintf(f, "%s\n", exports[i]);
  bool ok = fclose(f) == 0;
  char **ld = ANEWN(a, char *, n + 5);
  int k = 0;
  ld[k++] = "ld", ld[k++] = "-r", ld[k++] = "-o", ld[k++] = (char *)out;
  for (int i = 0; i < n; i++) ld[k++] = (char *)objs[i];
  char *oc[] = {"objcopy", arena_printf(a, "--keep-global-symbols=%s", keep), (char *)out, NULL};
  ok = ok && spawn(ld) && spawn(oc);
  unlink(keep);
  return ok;
}

bool jit_link(Arena *a, const JitPlan *p, const JitOpts *o, const char *const *objs, int n, bool object, const char *dir,
              const char *out) {
  const char **exports = jit_exports(a, p, o, object);
  return object ? link_object(a, exports, objs, n, dir, out) : link_shared(a, exports, objs, n, dir, out);
}
