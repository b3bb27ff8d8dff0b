/* run.c: --run: a model compiled in memory, opened through the runtime (the same
 * model symbols and metadata as a .so, resolved from the gccjit result), initialized,
 * --set/--load/--call as asked, then the --print tensors as a grid or JSON lines. */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "outfile.h"
#include "guard.h"
#include "run.h"
#include "tdsl.h"

/* ---- --run output ---- */

/* Shortest decimal that reads back as the same value of the element type. */
static void num_fmt(char *buf, size_t n, double v, bool f32, bool json) {
  if (isnan(v)) { snprintf(buf, n, json ? "NaN" : "nan"); return; }
  if (isinf(v)) { snprintf(buf, n, v > 0 ? (json ? "Infinity" : "inf") : (json ? "-Infinity" : "-inf")); return; }
  for (int p = f32 ? 6 : 15; p <= 17; p++) {
    snprintf(buf, n, "%.*g", p, v);
    double back = strtod(buf, NULL);
    if (f32 ? (float)back == (float)v : back == v) return;
  }
}

static void shape_str(FILE *o, const tdsl_tensor_info *ti) {
  int start[3] = {0, ti->nkind[0], ti->nkind[0] + ti->nkind[1]}; /* batch, output, input */
  int order[3] = {TDSL_BATCH, TDSL_INPUT, TDSL_OUTPUT};
  for (int r = 0; r < 3; r++) {
    int k = order[r];
    if (k != TDSL_OUTPUT && ti->nkind[k] == 0) continue;
    for (int i = 0; i < ti->nkind[k]; i++) {
      int ax = start[k] + i;
      if (i) fputc(',', o);
      if (ti->labels[ax]) fprintf(o, "%s=", ti->labels[ax]);
      fprintf(o, "%d", ti->dims[ax]);
    }
    if (k == TDSL_BATCH) fputc('|', o);
    if (k == TDSL_INPUT) fputs("->", o);
  }
}

static void shape_text(FILE *o, const void *ti) { shape_str(o, ti); }

static void dims_row(FILE *o, const void *arg, int kind) {
  const tdsl_tensor_info *ti = arg;
  int start = 0;
  for (int k = 0; k < kind; k++) start += ti->nkind[k]; /* memory order */
  json_dims(o, ti->dims + start, ti->nkind[kind]);
}

static double cell(const tdsl_tensor_info *ti, long i) {
  return ti->elem == TDSL_F64 ? ((double *)ti->data)[i] : ((float *)ti->data)[i];
}

/* Rank <= 2: a grid, the last axis along a row. */
static void print_grid(FILE *o, const tdsl_tensor_info *ti) {
  char num[64];
  long row = ti->rank ? ti->dims[ti->rank - 1] : 1;
  if (row <= 0) row = 1;
  for (long i = 0; i < ti->size; i++) {
    num_fmt(num, sizeof num, cell(ti, i), ti->elem == TDSL_F32, false);
    fprintf(o, "%s%10s", i % row ? " " : "  ", num);
    if ((i + 1) % row == 0) fputc('\n', o);
  }
}

/* Rank >= 3: nested brackets as numpy prints them: numbers right-aligned to a common
 * width, a blank line between blocks of the outer axes. */
static void print_block(FILE *o, char **strs, int width, const int *dims, int rank, int axis, long *at) {
  fputc('[', o);
  for (int i = 0; i < dims[axis]; i++) {
    if (axis == rank - 1) {
      fprintf(o, "%s%*s", i ? " " : "", width, strs[*at]);
      ++*at;
      continue;
    }
    if (i) {
      for (int k = 0; k < rank - axis - 1; k++) fputc('\n', o);
      fprintf(o, "%*s", axis + 1, "");
    }
    print_block(o, strs, width, dims, rank, axis + 1, at);
  }
  fputc(']', o);
}

static void print_nested(FILE *o, const tdsl_tensor_info *ti) {
  char **strs = calloc((size_t)ti->size, sizeof *strs);
  char num[64];
  int width = 1;
  for (long i = 0; strs && i < ti->size; i++) {
    num_fmt(num, sizeof num, cell(ti, i), ti->elem == TDSL_F32, false);
    strs[i] = strdup(num);
    int n = (int)strlen(num);
    if (n > width) width = n;
  }
  long at = 0;
  if (strs) print_block(o, strs, width, ti->dims, ti->rank, 0, &at);
  fputc('\n', o);
  for (long i = 0; strs && i < ti->size; i++) free(strs[i]);
  free(strs);
}

static void print_tensor(FILE *o, const char *name, const tdsl_tensor_info *ti, bool json) {
  char num[64];
  bool f32 = ti->elem == TDSL_F32;
  if (json) {
    static const JsonShape how = {shape_text, dims_row};
    json_shape_fields(o, name, &how, ti);
    fputs(",\"values\":[", o);
    for (long i = 0; i < ti->size; i++) {
      num_fmt(num, sizeof num, cell(ti, i), f32, true);
      fprintf(o, "%s%s", i ? "," : "", num);
    }
    fputs("]}\n", o);
    return;
  }
  fprintf(o, "%s: ", name);
  shape_str(o, ti);
  fputc('\n', o);
  if (ti->size == 0) fputs("  (empty)\n", o);
  else if (ti->rank >= 3) print_nested(o, ti);
  else print_grid(o, ti);
}

static int run_opened(Ctx *c, tdsl_model *model, const char *err);

/* Functions and data alike: both lookups are a dlsym of the result's library. */
void *run_jit_resolve(void *h, const char *name) { return gcc_jit_result_get_code((gcc_jit_result *)h, name); }

/* Running out of memory is the machine's limit, status 2 as the compiler's own (CLI.md,
 * tdslc(1)), not an error of the input; the runtime words it "out of memory[: ...]". */
static int status_of(const char *e) { return e && !strncmp(e, "out of memory", 13) ? 2 : 1; }

static int run_err(const char *what, const tdsl_model *m) {
  diag_tool_error("%s%s%s", what ? what : "", what ? ": " : "", tdsl_error(m));
  return status_of(tdsl_error(m));
}

/* A --load/--load-checkpoint/--save failure: 2 when the file itself could not be opened
 * (CLI.md: exit 2 for an unreadable file, as for the input and -o), 1 when it was read
 * but its contents do not fit the model. The runtime words open failures
 * "cannot read 'PATH': ..." / "cannot write 'PATH': ...". */
static int file_err(const char *what, const tdsl_model *m) {
  const char *e = tdsl_error(m);
  run_err(what, m);
  return !strncmp(e, "cannot read '", 13) || !strncmp(e, "cannot write '", 14) ? 2 : 1;
}

/* ---- names the model does not have ---- */

/* The newest top-level binding of name when it is not a tensor (Graph.topnames). */
static const TopName *topname(const Ctx *c, const char *name) {
  if (!c->graph) return NULL;
  for (int i = 0; i < c->graph->topnames.len; i++) {
    const TopName *n = c->graph->topnames.items[i];
    if (!strcmp(n->name, name)) return n;
  }
  return NULL;
}

/* "OPT: 'NAME' is WHAT, not WANTED (HINT)" and a note where NAME is bound: the model
 * knows only tensors, routines, index symbols and dimensions, so a name bound to
 * anything else (a compile-time number, a function, ...) is not in it by design.
 * false when name has no top-level binding (the caller says "no ... of that name"). */
static bool explain_name(Ctx *c, const char *opt, const char *name, const char *wanted, bool routine) {
  const TopName *n = topname(c, name);
  if (!n) return false;
  const char *hint = "";
  switch (n->kind) {
  case TOPNAME_VALUE:
    hint = " (a compile-time value is folded into the code: the compiled model does not keep it)";
    break;
  case TOPNAME_INDEX:
  case TOPNAME_DIM:
    hint = arena_printf(&c->arena, " (--set %s=N sets it)", name);
    break;
  case TOPNAME_ROUTINE:
    if (!routine) hint = arena_printf(&c->arena, " (--call %s runs it)", name);
    break;
  case TOPNAME_CODE:
    if (routine) hint = " (only a top-level let%cd of code without parameters is an exported routine)";
    break;
  case TOPNAME_FUNCTION:
    if (routine) hint = " (a function is not exported: bind its application with let%cd)";
    break;
  case TOPNAME_GRAD: /* what names the gradient by its tensor's name */
    break;
  }
  diag_error(&c->diag, (Loc){0}, "%s: '%s' is %s, not %s%s", opt, name, n->what, wanted, hint);
  if (n->loc.file) diag_note(&c->diag, n->loc, "'%s' is bound here", name);
  else diag_note(&c->diag, n->loc, "'%s' is built in", name);
  return true;
}

/* ---- what the model has, for a name it lacks ---- */

enum { NAMES_TENSORS, NAMES_ROUTINES, NAMES_SETTABLE };

static int names_count(const tdsl_model *m, int what) {
  return what == NAMES_TENSORS ? tdsl_num_tensors(m) : what == NAMES_ROUTINES ? tdsl_num_routines(m)
                                                     : tdsl_num_indices(m) + tdsl_num_dims(m);
}

static const char *names_at(tdsl_model *m, int what, int i) {
  if (what == NAMES_TENSORS) {
    tdsl_tensor_info ti;
    return tdsl_tensor(m, i, &ti) ? NULL : ti.name;
  }
  if (what == NAMES_ROUTINES) return tdsl_routine_name(m, i);
  int ni = tdsl_num_indices(m);
  return i < ni ? tdsl_index_name(m, i) : tdsl_dim_name(m, i - ni);
}

/* After "no X of that name": a note with the nearest name the model has (a typo), else
 * the names it has (the first 8 and a count), else that it has none. Tensors without a
 * name of their own (`t#3`, intermediates) are left out. */
static void suggest_names(Ctx *c, tdsl_model *m, const char *name, int what) {
  static const char *const kinds[] = {"tensors", "routines", "index symbols and dynamic dimensions"};
  static const char *const nones[] = {"tensors", "routines", "index symbols or dynamic dimensions"};
  int n = names_count(m, what);
  const char *best = NULL, *list = "";
  int best_d = INT_MAX, named = 0;
  for (int i = 0; i < n; i++) {
    const char *s = names_at(m, what, i);
    if (!s || strchr(s, '#')) continue;
    if (named < 8) list = arena_printf(&c->arena, "%s%s%s", list, named ? ", " : "", s);
    named++;
    if (diag_near(&c->arena, name, s, &best_d)) best = s;
  }
  if (best) diag_note(&c->diag, (Loc){0}, "did you mean '%s'?", best);
  else if (!named) diag_note(&c->diag, (Loc){0}, "the model has no %s", nones[what]);
  else if (named > 8) diag_note(&c->diag, (Loc){0}, "the model's %s: %s, ... (%d in all)", kinds[what], list, named);
  else diag_note(&c->diag, (Loc){0}, "the model's %s: %s", kinds[what], list);
}

/* NAME or NAME.grad that the model has no tensor of: 2 after the error (CLI.md: the
 * command line names what the input does not have, as an unreadable --load file). */
static int no_tensor(Ctx *c, tdsl_model *m, const char *opt, const char *p) {
  size_t n = strlen(p);
  const char *base = n > 5 && !strcmp(p + n - 5, ".grad") ? arena_strndup(&c->arena, p, n - 5) : NULL;
  if (base && tdsl_find_tensor(m, base) >= 0)
    diag_tool_error("%s %s: the tensor is not differentiable: it has no gradient", opt, p);
  else if (!explain_name(c, arena_printf(&c->arena, "%s %s", opt, p), base ? base : p, "a tensor", false)) {
    diag_tool_error("%s %s: no tensor of that name", opt, p);
    suggest_names(c, m, p, NAMES_TENSORS);
  }
  return 2;
}

/* A --call name that is no routine of the model: 2 after the error. */
static int no_routine(Ctx *c, tdsl_model *m, const char *p) {
  const char *opt = arena_printf(&c->arena, "--call %s", p);
  const char *dot = strrchr(p, '.');
  if (tdsl_find_tensor(m, p) >= 0) {
    diag_tool_error("%s: '%s' is a tensor, not a routine (--call %s.forward computes it)", opt, p, p);
    return 2;
  }
  if (dot && (!strcmp(dot, ".forward") || !strcmp(dot, ".backprop"))) {
    const char *t = arena_strndup(&c->arena, p, (size_t)(dot - p));
    if (tdsl_find_tensor(m, t) >= 0) { /* only backprop can be missing */
      diag_tool_error("%s: the tensor %s is not differentiable: it has no backprop", opt, t);
      return 2;
    }
    if (explain_name(c, opt, t, "a tensor", false)) return 2;
  } else if (explain_name(c, opt, p, "a routine", true)) {
    return 2;
  }
  diag_tool_error("%s: no routine of that name (an exported routine, T.forward or T.backprop)", opt);
  suggest_names(c, m, p, NAMES_ROUTINES);
  return 2;
}

/* The join of dimensions whose graph id a name ?ID gives (--dump-ir prints joins as
 * `join ?ID max(...)`), or NULL. */
static const DimSym *join_by_id(const Ctx *c, const char *name) {
  if (!c->graph || name[0] != '?' || !name[1]) return NULL;
  char *end;
  long id = strtol(name + 1, &end, 10);
  if (*end || id < 0 || id >= c->graph->dimsyms.len) return NULL;
  const DimSym *d = c->graph->dimsyms.items[id];
  return d->njoin ? d : NULL;
}

/* The join of dimensions named name (`max(n,m)`), or NULL. */
static const DimSym *join_by_name(const Ctx *c, const char *name) {
  for (int i = 0; c->graph && i < c->graph->dimsyms.len; i++) {
    const DimSym *d = c->graph->dimsyms.items[i];
    if (d->njoin && d->name && !strcmp(d->name, name)) return d;
  }
  return NULL;
}

/* A --set name that is no index symbol or dimension of the model: 2 after the error. */
static int no_settable(Ctx *c, tdsl_model *m, const char *name) {
  const DimSym *j = join_by_id(c, name);
  if (tdsl_find_tensor(m, name) >= 0)
    diag_tool_error("--set: '%s' is a tensor, not an index symbol or dynamic dimension (--load %s=PATH sets its values)",
                    name, name);
  else if (j) {
    const char *parts = "";
    for (int k = 0; k < j->njoin; k++) {
      const DimSym *d = c->graph->dimsyms.items[j->join[k]];
      const char *dn = d->name ? d->name : arena_printf(&c->arena, "?%d", d->id);
      parts = arena_printf(&c->arena, "%s%s%s", parts, !k ? "" : k == j->njoin - 1 ? " and " : ", ", dn);
    }
    diag_tool_error("--set: '%s' is the join %s (the largest of %s), computed from the dimensions it joins: set "
                    "%s instead", name, j->name, parts, parts);
  }
  else if (!explain_name(c, "--set", name, "an index symbol or dynamic dimension", false)) {
    diag_tool_error("--set: no index symbol or dynamic dimension named '%s'", name);
    suggest_names(c, m, name, NAMES_SETTABLE);
  }
  return 2;
}

static bool has_index(const tdsl_model *m, const char *name) {
  for (int i = 0; i < tdsl_num_indices(m); i++)
    if (!strcmp(tdsl_index_name(m, i), name)) return true;
  return false;
}

/* --set of the dimensions (pass 0: they size the tensors) or the index symbols (pass 1:
 * a range may be a dimension's value). */
static int run_sets(Ctx *c, tdsl_model *m, int pass) {
  const Options *o = &c->opt;
  for (int i = 0; i < o->sets.len; i++) {
    RunSet *s = o->sets.items[i];
    long cur;
    bool dim = tdsl_get_dim(m, s->name, &cur) == 0;
    if (dim != (pass == 0)) continue;
    if (!dim && !has_index(m, s->name)) return no_settable(c, m, s->name);
    if (dim ? tdsl_set_dim(m, s->name, (long)s->value) : tdsl_set_index(m, s->name, (long)s->value)) {
      run_err("--set", m);
      /* a join (max(n,m)) is never settable: a bad command line like '?ID' of one
       * (no_settable); a value the model refuses is an error of the input, 1 */
      return dim && join_by_name(c, s->name) ? 2 : 1;
    }
  }
  return 0;
}

/* init, then --set dimensions, the loads (a .npy file may set dimensions too), then
 * --set index symbols. */
int run_prepare(Ctx *c, tdsl_model *m) {
  Options *o = &c->opt;
  if (tdsl_init(m, o->seed)) return run_err("init", m);
  int rc = run_sets(c, m, 0);
  if (rc) return rc;
  if (o->load_ckpt && tdsl_load(m, o->load_ckpt)) return file_err("--load-checkpoint", m);
  for (int i = 0; i < o->loads.len; i++) {
    RunLoad *l = o->loads.items[i];
    if (tdsl_find_tensor(m, l->tensor) < 0) return no_tensor(c, m, "--load", l->tensor);
    if (tdsl_load_file(m, l->tensor, l->path)) return file_err("--load", m);
  }
  return run_sets(c, m, 1);
}

static int run_model(Ctx *c, tdsl_model *m) {
  Options *o = &c->opt;
  for (int i = 0; i < o->prints.len; i++) {
    const char *p = o->prints.items[i];
    if (tdsl_find_tensor(m, p) < 0) return no_tensor(c, m, "--print", p);
  }
  for (int i = 0; i < o->calls.len; i++)
    if (tdsl_find_routine(m, o->calls.items[i]) < 0 && strcmp(o->calls.items[i], "init"))
      return no_routine(c, m, o->calls.items[i]);
  int prep = run_prepare(c, m);
  if (prep) return prep;
  if (o->calls.len) {
    for (int i = 0; i < o->calls.len; i++)
      if (tdsl_call(m, o->calls.items[i])) return run_err("--call", m);
  } else {
    for (int i = 0; i < o->prints.len; i++) {
      const char *p = o->prints.items[i];
      size_t n = strlen(p);
      const char *t = n > 5 && !strcmp(p + n - 5, ".grad") && tdsl_find_tensor(m, arena_strndup(&c->arena, p, n - 5)) >= 0
                          ? arena_strndup(&c->arena, p, n - 5) : p;
      const char *fw = arena_printf(&c->arena, "%s.forward", t);
      if (tdsl_find_routine(m, fw) >= 0 && tdsl_call(m, fw)) return run_err("--run", m);
    }
  }
  if (o->save && !strcmp(o->save, "-")) { /* the standard output: saved aside, copied there */
    OutFile of;
    if (!out_begin(&c->arena, &of, "-")) return 2;
    if (tdsl_save(m, of.tmp, TDSL_SAVE_TRAINING)) {
      out_discard(&of);
      return file_err("--save", m);
    }
    if (!out_commit(&of)) return 2;
  } else if (o->save && tdsl_save(m, o->save, TDSL_SAVE_TRAINING)) {
    return file_err("--save", m);
  }
  for (int i = 0; i < o->prints.len; i++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor_by_name(m, o->prints.items[i], &ti)) return run_err("--print", m);
    print_tensor(stdout, o->prints.items[i], &ti, o->json);
  }
  return 0;
}

int run_jit_result(Ctx *c, gcc_jit_result *r) {
  char err[512];
  return run_opened(c, tdsl_open_resolved(run_jit_resolve, r, err, sizeof err), err);
}

int run_jit_file(Ctx *c, const char *path) {
  char err[512];
  return run_opened(c, tdsl_open(path, err, sizeof err), err);
}

static int run_opened(Ctx *c, tdsl_model *model, const char *err) {
  guard_rearm(); /* the model may run long after libgccjit's compile */
  /* TDSLC_TEST_LIB_STOP=term-run (tests only): interrupted while the model runs */
  const char *stop = getenv("TDSLC_TEST_LIB_STOP");
  if (stop && !strcmp(stop, "term-run")) raise(SIGTERM);
  if (!model) {
    /* The model was just compiled from a valid input: what stops it opening is the
     * machine (no CUDA driver, no memory), so 2 as --check says, never 1 (CLI.md: 1 is
     * an input with errors). */
    diag_tool_error("%s", err);
    return 2;
  }
  int rc = run_model(c, model);
  timing_mark(c, "run");
  tdsl_close(model);
  return rc;
}
