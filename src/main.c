/* main.c: the tdslc driver: command line (CLI.md), then the pipeline
 *   parse -> stage -> infer shapes -> infer projections -> lower -> backend,
 * stopping at the stage a --dump-* option asks for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "ctx.h"

#define TDSLC_VERSION "0.1.0"

static void usage(FILE *out) {
  fputs("usage: tdslc [OPTIONS] FILE.tdsl\n"
        "  -o OUT                 output path (default: FILE.so)\n"
        "  -c                     emit an object file (.o) instead of a shared library\n"
        "  --backend=cc|cuda      code generator (default cc: libgccjit, CPU)\n"
        "  --arch=sm_NN           CUDA target (default sm_80)\n"
        "  -O0 ... -O3            optimization level (default -O2)\n"
        "  -I DIR                 search path for `open`\n"
        "  --precision=single|double   default element type (single)\n"
        "  --emit-header=FILE.h   C header for the compiled model\n"
        "  --name=NAME            prefix of the model's symbols (default: from FILE)\n"
        "  --emit-c, --emit-cuda  print the generated C / CUDA source\n"
        "  --emit-ptx             with --backend=cuda: write PTX (to -o) instead of a .so\n"
        "  --check-bounds         generated code traps out-of-range indices\n"
        "  --dump-ast             print the syntax tree, then stop\n"
        "  --dump-graph           print the staged tensor graph, then stop\n"
        "  --dump-shapes          print every named tensor's inferred shape, then stop\n"
        "  --dump-projections     print each assignment's loops and index expressions\n"
        "  --dump-ir              print the lowered loop IR, then stop\n"
        "  --json                 with --dump-shapes/--dump-projections/--print: JSON Lines\n"
        "  --run                  compile in process and execute:\n"
        "      [--seed N] [--set SYM=INT]... [--load TENSOR=PATH]... [--call ROUTINE]...\n"
        "      [--print TENSOR]...\n"
        "  --version, --help\n",
        out);
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "tdslc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\ntry 'tdslc --help'\n");
  return 2;
}

/* "--name=VALUE" or "--name VALUE": returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] == 0 && *i + 1 < argc) return argv[++*i];
  return NULL;
}

static bool parse_int(const char *s, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return false;
  *out = v;
  return true;
}

/* A C identifier of at most 64 characters: it prefixes the model's symbols. */
static bool c_identifier(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9') || strlen(s) > 64) return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return false;
  return true;
}

static int parse_args(Ctx *c, int argc, char **argv) {
  Options *o = &c->opt;
  o->action = ACT_COMPILE;
  o->opt_level = 2;
  o->arch = "sm_80";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
    if (!strcmp(a, "--version")) { printf("tdslc " TDSLC_VERSION "\n"); exit(0); }
    if (!strcmp(a, "-o")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      o->output = argv[i];
    } else if (!strcmp(a, "-c")) o->object = true;
    else if ((v = opt_value(argc, argv, &i, "--backend"))) {
      if (!strcmp(v, "cc")) o->backend = BACKEND_CC;
      else if (!strcmp(v, "cuda")) o->backend = BACKEND_CUDA;
      else return bad_usage("unknown backend '%s' (expected cc or cuda)", v);
    } else if ((v = opt_value(argc, argv, &i, "--arch"))) {
      if (strncmp(v, "sm_", 3) != 0 || strlen(v) < 5 || strspn(v + 3, "0123456789") < 2 ||
          strspn(v + 3, "0123456789abf") != strlen(v + 3))
        return bad_usage("bad --arch '%s' (expected sm_NN)", v);
      o->arch = v;
    } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3])
      o->opt_level = a[2] - '0';
    else if (!strcmp(a, "-I")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      vec_push(&c->arena, &o->include_dirs, argv[i]);
    } else if (a[0] == '-' && a[1] == 'I' && a[2]) vec_push(&c->arena, &o->include_dirs, (void *)(a + 2));
    else if ((v = opt_value(argc, argv, &i, "--precision"))) {
      if (!strcmp(v, "single")) o->double_prec = false;
      else if (!strcmp(v, "double")) o->double_prec = true;
      else return bad_usage("unknown precision '%s' (expected single or double)", v);
    } else if ((v = opt_value(argc, argv, &i, "--emit-header"))) o->emit_header = v;
    else if ((v = opt_value(argc, argv, &i, "--name"))) {
      if (!c_identifier(v)) return bad_usage("bad --name '%s' (expected a C identifier)", v);
      o->name = v;
    }
    else if (!strcmp(a, "--emit-c")) o->action = ACT_EMIT_C;
    else if (!strcmp(a, "--emit-cuda")) o->action = ACT_EMIT_CUDA;
    else if (!strcmp(a, "--emit-ptx")) o->action = ACT_EMIT_PTX;
    else if (!strcmp(a, "--dump-ast")) o->action = ACT_DUMP_AST;
    else if (!strcmp(a, "--dump-graph")) o->action = ACT_DUMP_GRAPH;
    else if (!strcmp(a, "--dump-shapes")) o->action = ACT_DUMP_SHAPES;
    else if (!strcmp(a, "--dump-projections")) o->action = ACT_DUMP_PROJECTIONS;
    else if (!strcmp(a, "--dump-ir")) o->action = ACT_DUMP_IR;
    else if (!strcmp(a, "--json")) o->json = true;
    else if (!strcmp(a, "--check-bounds")) o->check_bounds = true;
    else if (!strcmp(a, "--run")) o->action = ACT_RUN;
    else if ((v = opt_value(argc, argv, &i, "--seed"))) {
      long long s;
      if (!parse_int(v, &s) || s < 0) return bad_usage("bad --seed '%s'", v);
      o->seed = (unsigned long long)s;
    } else if ((v = opt_value(argc, argv, &i, "--set"))) {
      const char *eq = strchr(v, '=');
      long long val;
      if (!eq || eq == v || !parse_int(eq + 1, &val)) return bad_usage("bad --set '%s' (expected SYM=INT)", v);
      RunSet *s = ANEW(&c->arena, RunSet);
      s->name = arena_strndup(&c->arena, v, (size_t)(eq - v));
      s->value = val;
      vec_push(&c->arena, &o->sets, s);
    } else if ((v = opt_value(argc, argv, &i, "--load"))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1]) return bad_usage("bad --load '%s' (expected TENSOR=PATH)", v);
      RunLoad *l = ANEW(&c->arena, RunLoad);
      l->tensor = arena_strndup(&c->arena, v, (size_t)(eq - v));
      l->path = eq + 1;
      vec_push(&c->arena, &o->loads, l);
    } else if ((v = opt_value(argc, argv, &i, "--call"))) vec_push(&c->arena, &o->calls, (void *)v);
    else if ((v = opt_value(argc, argv, &i, "--print"))) vec_push(&c->arena, &o->prints, (void *)v);
    else if (a[0] == '-' && a[1]) return bad_usage("unknown option '%s'", a);
    else if (o->input) return bad_usage("more than one input file ('%s')", a);
    else o->input = a;
  }
  if (!o->input) return bad_usage("%s", "no input file");
  if (o->action != ACT_RUN && (o->sets.len || o->loads.len || o->calls.len || o->prints.len))
    return bad_usage("%s", "--set/--load/--call/--print need --run");
  return 0;
}

static const char *dirname_of(Arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return ".";
  return arena_strndup(a, path, (size_t)(slash - path));
}

static int run(Ctx *c) {
  SrcFile *f = ctx_read_file(c, c->opt.input);
  if (!f) {
    fprintf(stderr, "tdslc: error: cannot read '%s': %s\n", c->opt.input, strerror(errno));
    return 2;
  }
  Program *p = parse_program(&c->arena, &c->diag, f);
  if (!p || c->diag.errors) return 1;
  if (c->opt.action == ACT_DUMP_AST) {
    ast_print_program(stdout, p);
    return 0;
  }
  Graph *g = stage_program(c, p);
  if (!g || c->diag.errors) return 1;
  if (c->opt.action == ACT_DUMP_GRAPH) {
    graph_print(stdout, g);
    return 0;
  }
  if (!infer_shapes(c, g) || c->diag.errors) return 1;
  if (c->opt.action == ACT_DUMP_SHAPES) {
    dump_shapes(stdout, g, c->opt.json);
    return 0;
  }
  if (!infer_projections(c, g) || c->diag.errors) return 1;
  if (c->opt.action == ACT_DUMP_PROJECTIONS) {
    dump_projections(stdout, g, c->opt.json);
    return 0;
  }
  return backend_main(c, g);
}

int main(int argc, char **argv) {
  Ctx c;
  memset(&c, 0, sizeof c);
  diag_init(&c.diag, stderr);
  int rc = parse_args(&c, argc, argv);
  if (rc) {
    arena_free(&c.arena);
    return rc;
  }
  /* /proc/self/exe finds the real binary whether run by path, through PATH or a link. */
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) buf[n] = 0;
  c.exe_dir = dirname_of(&c.arena, n > 0 ? buf : argv[0]);
  rc = run(&c);
  fflush(stdout);
  arena_free(&c.arena);
  return rc;
}
