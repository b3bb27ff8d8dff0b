/* backend.c: after inference: lower to the loop IR, then --dump-ir, --emit-c, compile
 * to a .so/.o (+ --emit-header), or --run in process through the runtime (the same
 * model symbols and metadata as a .so, resolved from the gccjit result). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "cuda.h"
#include "ir.h"
#include "jit.h"
#include "tdsl.h"

static const char *model_base(Ctx *c) {
  const char *in = c->opt.input, *slash = strrchr(in, '/');
  const char *b = slash ? slash + 1 : in;
  const char *dot = strrchr(b, '.');
  return dot && dot != b ? arena_strndup(&c->arena, b, (size_t)(dot - b)) : b;
}

const char *model_name(Ctx *c) {
  if (c->opt.name) return c->opt.name;
  const char *b = model_base(c);
  char *n = arena_printf(&c->arena, "%s%s", *b >= '0' && *b <= '9' ? "_" : "", b);
  for (char *p = n; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) *p = '_';
  return *n ? n : "model";
}

static JitOpts jit_opts(Ctx *c) {
  JitOpts o = {.name = model_name(c), .opt_level = c->opt.opt_level, .check_bounds = c->opt.check_bounds, .native = true};
  return o;
}

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

static void dims_json(FILE *o, const tdsl_tensor_info *ti, int kind) {
  int start[3] = {0, ti->nkind[0], ti->nkind[0] + ti->nkind[1]};
  fputc('[', o);
  for (int i = 0; i < ti->nkind[kind]; i++) fprintf(o, "%s%d", i ? "," : "", ti->dims[start[kind] + i]);
  fputc(']', o);
}

static double cell(const tdsl_tensor_info *ti, long i) {
  return ti->elem == TDSL_F64 ? ((double *)ti->data)[i] : ((float *)ti->data)[i];
}

static void print_tensor(FILE *o, const char *name, const tdsl_tensor_info *ti, bool json) {
  char num[64];
  bool f32 = ti->elem == TDSL_F32;
  if (json) {
    fprintf(o, "{\"name\":\"%s\",\"shape\":\"", name);
    shape_str(o, ti);
    fputs("\",\"batch\":", o);
    dims_json(o, ti, TDSL_BATCH);
    fputs(",\"input\":", o);
    dims_json(o, ti, TDSL_INPUT);
    fputs(",\"output\":", o);
    dims_json(o, ti, TDSL_OUTPUT);
    fputs(",\"values\":[", o);
    for (long i = 0; i < ti->size; i++) {
      num_fmt(num, sizeof num, cell(ti, i), f32, true);
      fprintf(o, "%s%s", i ? "," : "", num);
    }
    fputs("]}\n", o);
    return;
  }
  /* A grid: the last axis along a row, a blank line between blocks of the axis before. */
  fprintf(o, "%s: ", name);
  shape_str(o, ti);
  fputc('\n', o);
  long row = ti->rank ? ti->dims[ti->rank - 1] : 1;
  long block = ti->rank > 1 ? row * ti->dims[ti->rank - 2] : ti->size + 1;
  if (row <= 0) row = 1;
  for (long i = 0; i < ti->size; i++) {
    num_fmt(num, sizeof num, cell(ti, i), f32, false);
    fprintf(o, "%s%10s", i % row ? " " : "  ", num);
    if ((i + 1) % row == 0) {
      fputc('\n', o);
      if ((i + 1) % block == 0 && i + 1 < ti->size) fputc('\n', o);
    }
  }
  if (ti->size == 0) fputs("  (empty)\n", o);
}

/* Functions and data alike: both lookups are a dlsym of the result's library. */
static void *jit_resolve(void *h, const char *name) { return gcc_jit_result_get_code((gcc_jit_result *)h, name); }

static int run_err(const char *what, const tdsl_model *m) {
  fprintf(stderr, "tdslc: error: %s%s%s\n", what ? what : "", what ? ": " : "", tdsl_error(m));
  return 1;
}

static int run_model(Ctx *c, tdsl_model *m) {
  Options *o = &c->opt;
  for (int i = 0; i < o->prints.len; i++) {
    const char *p = o->prints.items[i];
    if (tdsl_find_tensor(m, p) < 0) {
      size_t n = strlen(p);
      if (n > 5 && !strcmp(p + n - 5, ".grad") && tdsl_find_tensor(m, arena_strndup(&c->arena, p, n - 5)) >= 0)
        fprintf(stderr, "tdslc: error: --print %s: the tensor is not differentiable: it has no gradient\n", p);
      else fprintf(stderr, "tdslc: error: --print %s: no tensor of that name\n", p);
      return 1;
    }
  }
  for (int i = 0; i < o->calls.len; i++)
    if (tdsl_find_routine(m, o->calls.items[i]) < 0) {
      fprintf(stderr, "tdslc: error: --call %s: no routine of that name (an exported routine, T.forward or T.backprop)\n",
              (const char *)o->calls.items[i]);
      return 1;
    }
  if (tdsl_init(m, o->seed)) return run_err("init", m);
  for (int i = 0; i < o->sets.len; i++) {
    RunSet *s = o->sets.items[i];
    if (tdsl_set_index(m, s->name, (long)s->value)) return run_err("--set", m);
  }
  for (int i = 0; i < o->loads.len; i++) {
    RunLoad *l = o->loads.items[i];
    if (tdsl_load_file(m, l->tensor, l->path)) return run_err("--load", m);
  }
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
  for (int i = 0; i < o->prints.len; i++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor_by_name(m, o->prints.items[i], &ti)) return run_err("--print", m);
    print_tensor(stdout, o->prints.items[i], &ti, o->json);
  }
  return 0;
}

static int do_run(Ctx *c, IrModule *m) {
  JitOpts jo = jit_opts(c);
  gcc_jit_context *jc = NULL;
  gcc_jit_result *r = c->opt.backend == BACKEND_CUDA ? cuda_compile_mem(c, m, &jc) : jit_compile_mem(&c->arena, m, &jo, &jc);
  if (!r) return 1;
  char err[512];
  tdsl_model *model = tdsl_open_resolved(jit_resolve, r, err, sizeof err);
  int rc;
  if (!model) {
    fprintf(stderr, "tdslc: error: %s\n", err);
    rc = 1;
  } else {
    rc = run_model(c, model);
    tdsl_close(model);
  }
  gcc_jit_result_release(r);
  gcc_jit_context_release(jc);
  return rc;
}

int backend_main(Ctx *c, Graph *g) {
  Options *o = &c->opt;
  IrModule *m = lower_graph(&c->arena, &c->diag, g, o->double_prec);
  if (!m || c->diag.errors) return 1;
  if (o->emit_header) {
    FILE *f = fopen(o->emit_header, "w");
    if (!f) {
      fprintf(stderr, "tdslc: error: cannot write '%s'\n", o->emit_header);
      return 2;
    }
    emit_header(f, m, model_name(c), NULL);
    fclose(f);
  }
  /* --backend=cuda: its own code generator (backends/cuda/); --run goes through do_run. */
  bool cuda = o->backend == BACKEND_CUDA || o->action == ACT_EMIT_CUDA || o->action == ACT_EMIT_PTX;
  if (cuda && o->action != ACT_RUN && o->action != ACT_DUMP_IR && o->action != ACT_EMIT_C) return cuda_backend(c, m, model_base(c));
  if (cuda && o->action == ACT_RUN && !cuda_can_run()) return 2;
  switch (o->action) {
  case ACT_DUMP_IR: ir_print(stdout, m); return 0;
  case ACT_EMIT_C: emit_c(stdout, m, o->check_bounds, model_name(c)); return 0;
  case ACT_RUN: return do_run(c, m);
  default: break;
  }
  const char *out = o->output ? o->output : arena_printf(&c->arena, "%s.%s", model_base(c), o->object ? "o" : "so");
  JitOpts jo = jit_opts(c);
  return jit_compile_file(&c->arena, m, &jo, out, o->object) ? 0 : 1;
}
