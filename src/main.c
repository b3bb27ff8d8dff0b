/* main.c: the tdslc driver: command line (tdslc(1)), then the pipeline
 *   parse -> stage -> infer shapes -> infer projections -> lower -> backend,
 * stopping at the stage a --dump-* option asks for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "cache.h"
#include "check.h"
#include "ctx.h"
#include "cuda.h"
#include "guard.h"
#include "ir.h"
#include "jit.h"
#include "outfile.h"
#include "pcompile.h"
#include "run.h"
#include "schedule.h"
#include "sched_fuse.h"


static void usage(FILE *out) {
  fputs("usage: tdslc [OPTIONS] FILE.tdsl\n"
        "  -o OUT                 output path (default: FILE.so)\n"
        "  -c                     emit an object file (.o) instead of a shared library\n"
        "  --backend=cc|cuda      code generator (default cc: libgccjit, CPU)\n"
        "  --arch=sm_NN           CUDA target (default sm_80)\n"
        "  --tf32                 CUDA: fp32 contractions on TF32 tensor cores (sm_80+)\n"
        "  -O0 ... -O3            optimization level (default -O2)\n"
        "  -I DIR                 search path for `open`\n"
        "  --precision=single|double   default element type (single)\n"
        "  --emit-header=FILE.h   C header for the compiled model\n"
        "  --name=NAME            prefix of the model's symbols (default: from FILE)\n"
        "  -v                     print each phase with its time on stderr\n"
        "  --time-report          print a table of the phases' times at the end\n"
        "  --no-cache             do not use the compile cache ($XDG_CACHE_HOME/tdslc)\n"
        "  -j N                   compile on N worker processes (default: the online cores)\n"
        "  --no-split             compile in one gcc context (no groups, no workers)\n"
        "  --emit-c, --emit-cuda  print the generated C / CUDA source\n"
        "  --emit-ptx             with --backend=cuda: write PTX (to -o) instead of a .so\n"
        "  --check-bounds         generated code traps out-of-range indices\n"
        "  --strict-fp            keep the source order of sums (default: reassociate)\n"
        "  --dump-ast             print the syntax tree, then stop\n"
        "  --dump-graph           print the staged tensor graph, then stop\n"
        "  --dump-shapes          print every named tensor's inferred shape, then stop\n"
        "  --dump-projections     print each assignment's loops and index expressions\n"
        "  --dump-ir              print the scheduled loop IR, then stop\n"
        "  --json                 with --dump-shapes/--dump-projections/--print: JSON Lines\n"
        "  --verbose              with --dump-shapes: mark parameters, count their values\n"
        "  --run                  compile in process and execute:\n"
        "      [--seed N] [--set NAME=INT]... [--load TENSOR=PATH]... [--call ROUTINE]...\n"
        "      [--print TENSOR]... [--load-checkpoint PATH] [--save PATH]\n"
        "  --check                compile twice (plain -O0 reference, as configured), run every\n"
        "                         routine on both, compare every tensor [--seed/--set/--load]\n"
        "  --check-ulps=N         --check tolerance (default 256; 0: bitwise)\n"
        "  -MD, -MF FILE          also write a make dependency file (default: OUT with .d)\n"
        "  --version, --help\n",
        out);
}

static int bad_usage(const char *fmt, const char *arg) {
  char *msg = NULL;
  if (asprintf(&msg, fmt, arg) < 0) msg = NULL;
  diag_tool_error("%s", msg ? msg : "out of memory");
  free(msg);
  fputs("try 'tdslc --help'\n", stderr);
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

/* Selects the mode; a second, different mode option is a conflict. */
/* The options that select a mode, or -1. */
static int mode_option(const char *a) {
  static const struct { const char *opt; Action act; } modes[] = {
      {"--emit-c", ACT_EMIT_C},         {"--emit-cuda", ACT_EMIT_CUDA},   {"--emit-ptx", ACT_EMIT_PTX},
      {"--dump-ast", ACT_DUMP_AST},     {"--dump-graph", ACT_DUMP_GRAPH}, {"--dump-shapes", ACT_DUMP_SHAPES},
      {"--dump-projections", ACT_DUMP_PROJECTIONS}, {"--dump-ir", ACT_DUMP_IR}, {"--run", ACT_RUN},
      {"--check", ACT_CHECK}};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (!strcmp(a, modes[i].opt)) return (int)modes[i].act;
  return -1;
}

/* What went to stdout (dumps, --emit-c/--emit-cuda, --run's prints, --help) must have
 * been written: a full disk or /dev/full left a truncated output behind an exit 0. */
static int finish_stdout(int rc) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
  diag_tool_error("cannot write the standard output: %s", errno ? strerror(errno) : "write error");
  return rc ? rc : 2;
}

/* An option that is not one: the message says what is wrong with it when it is a known
 * option given wrongly (its value missing, a value given to a flag, a bad -O level). */
static int bad_option(const char *a) {
  static const char *const valued[] = {"--backend", "--arch", "--precision", "--emit-header", "--name",
                                       "--check-ulps", "--seed", "--set", "--load", "--call", "--print",
                                       "--save", "--load-checkpoint"};
  static const char *const flags[] = {"-c", "-v", "--time-report", "--no-cache", "--no-split", "--json",
                                      "--verbose", "--check-bounds", "--tf32", "--strict-fp", "-MD"};
  for (size_t i = 0; i < sizeof valued / sizeof *valued; i++)
    if (!strcmp(a, valued[i])) return bad_usage("%s needs an argument", a);
  const char *eq = strchr(a, '=');
  if (eq) {
    char *name = strndup(a, (size_t)(eq - a));
    bool flag = name && mode_option(name) >= 0;
    for (size_t i = 0; name && i < sizeof flags / sizeof *flags; i++) flag |= !strcmp(name, flags[i]);
    int rc = flag ? bad_usage("option '%s' takes no value", name) : -1;
    free(name);
    if (rc >= 0) return rc;
  }
  if (a[1] == 'O') return bad_usage("bad optimization level '%s' (expected -O0, -O1, -O2 or -O3)", a);
  return bad_usage("unknown option '%s'", a);
}

/* An option's value that must not be empty (a name or a path). */
static bool empty_value(const char *opt, const char *v, const char *what) {
  if (*v) return false;
  char *msg = NULL;
  if (asprintf(&msg, "%s needs %s, not an empty string", opt, what) < 0) msg = NULL;
  bad_usage("%s", msg ? msg : "out of memory");
  free(msg);
  return true;
}

static int set_action(Options *o, const char **by, Action act, const char *opt) {
  if (*by && o->action != act) {
    diag_tool_error("%s and %s cannot be combined (each selects what tdslc does)", *by, opt);
    fputs("try 'tdslc --help'\n", stderr);
    return 2;
  }
  o->action = act;
  *by = opt;
  return 0;
}

/* Options that would do nothing in the selected mode are refused: the user meant
 * something else. */
static int check_modes(const Options *o, const char *mode, bool arch_given) {
  Action a = o->action;
  bool front = a == ACT_DUMP_AST || a == ACT_DUMP_GRAPH || a == ACT_DUMP_SHAPES || a == ACT_DUMP_PROJECTIONS;
  bool writes = a == ACT_COMPILE || a == ACT_EMIT_PTX;
  bool cuda = o->backend == BACKEND_CUDA || a == ACT_EMIT_CUDA || a == ACT_EMIT_PTX;
  const char *useless = NULL;
  if (o->output && !writes) useless = "-o";
  else if (o->object && a != ACT_COMPILE) useless = "-c";
  else if (o->emit_header && front) useless = "--emit-header";
  else if (o->json && a != ACT_DUMP_SHAPES && a != ACT_DUMP_PROJECTIONS && a != ACT_RUN) useless = "--json";
  else if (arch_given && !cuda) useless = "--arch";
  else if (o->tf32 && !cuda) useless = "--tf32";
  if (useless) {
    /* --arch and --tf32 wait for the back end, not for a mode: say what they lack */
    if (!strcmp(useless, "--arch") || !strcmp(useless, "--tf32"))
      diag_tool_error("%s does nothing without --backend=cuda", useless);
    else
      diag_tool_error("%s does nothing with %s", useless, mode);
    fputs("try 'tdslc --help'\n", stderr);
    return 2;
  }
  if (a == ACT_EMIT_PTX && o->backend != BACKEND_CUDA) return bad_usage("%s", "--emit-ptx needs --backend=cuda");
  if (a == ACT_EMIT_PTX && o->object) return bad_usage("%s", "-c and --emit-ptx cannot be combined");
  return 0;
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
  const char *mode_by = NULL; /* the option that selected o->action */
  bool arch_given = false;
  o->action = ACT_COMPILE;
  o->opt_level = 2;
  o->arch = "sm_80";
  o->check_ulps = -1;
  bool seeded = false, end_of_options = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    /* `--` ends the options, as in gcc and POSIX utilities: a file named "-x.tdsl". */
    if (!strcmp(a, "--") && !end_of_options) { end_of_options = true; continue; }
    if (end_of_options) {
      if (o->input) return bad_usage("more than one input file ('%s')", a);
      o->input = a;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(finish_stdout(0)); }
    if (!strcmp(a, "--version")) { printf("tdslc " TDSLC_VERSION "\n"); exit(finish_stdout(0)); }
    if (!strcmp(a, "-o")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      if (empty_value(a, argv[i], "a file name")) return 2;
      o->output = argv[i];
    } else if (a[0] == '-' && a[1] == 'o' && a[2]) o->output = a + 2; /* -oFILE, as gcc */
    else if (!strcmp(a, "-c")) o->object = true;
    else if ((v = opt_value(argc, argv, &i, "--backend"))) {
      if (!strcmp(v, "cc")) o->backend = BACKEND_CC;
      else if (!strcmp(v, "cuda")) o->backend = BACKEND_CUDA;
      else return bad_usage("unknown backend '%s' (expected cc or cuda)", v);
    } else if ((v = opt_value(argc, argv, &i, "--arch"))) {
      if (strncmp(v, "sm_", 3) != 0 || strlen(v) < 5 || strspn(v + 3, "0123456789") < 2 ||
          strspn(v + 3, "0123456789abf") != strlen(v + 3))
        return bad_usage("bad --arch '%s' (expected sm_NN)", v);
      o->arch = v;
      arch_given = true;
    } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      o->opt_level = a[2] - '0';
    } else if (!strcmp(a, "-O")) o->opt_level = 1; /* gcc: -O is -O1 */
    else if (!strcmp(a, "-I")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      vec_push(&c->arena, &o->include_dirs, argv[i]);
    } else if (a[0] == '-' && a[1] == 'I' && a[2]) vec_push(&c->arena, &o->include_dirs, (void *)(a + 2));
    else if ((v = opt_value(argc, argv, &i, "--precision"))) {
      if (!strcmp(v, "single")) o->double_prec = false;
      else if (!strcmp(v, "double")) o->double_prec = true;
      else return bad_usage("unknown precision '%s' (expected single or double)", v);
    } else if ((v = opt_value(argc, argv, &i, "--emit-header"))) {
      if (empty_value("--emit-header", v, "a file name")) return 2;
      o->emit_header = v;
    }
    else if (!strcmp(a, "-v")) o->phase_times = true;
    else if (!strcmp(a, "--time-report")) o->time_report = true;
    else if (!strcmp(a, "--no-cache")) o->no_cache = true;
    else if (!strcmp(a, "--no-split")) o->no_split = true;
    else if (!strcmp(a, "-j") || (a[0] == '-' && a[1] == 'j' && a[2])) {
      const char *n = a[2] ? a + 2 : ++i < argc ? argv[i] : NULL;
      long long j;
      if (!n) return bad_usage("%s needs an argument", a);
      if (!parse_int(n, &j) || j < 1 || j > 256) return bad_usage("bad -j '%s' (expected 1 to 256 workers)", n);
      o->jobs = (int)j;
    }
    else if ((v = opt_value(argc, argv, &i, "--name"))) {
      if (!c_identifier(v)) return bad_usage("bad --name '%s' (expected a C identifier)", v);
      o->name = v;
    }
    else if (mode_option(a) >= 0) {
      if (set_action(o, &mode_by, (Action)mode_option(a), a)) return 2;
    }
    else if (!strcmp(a, "--json")) o->json = true;
    else if (!strcmp(a, "--verbose")) o->verbose = true;
    else if (!strcmp(a, "--check-bounds")) o->check_bounds = true;
    else if (!strcmp(a, "--tf32")) o->tf32 = true;
    else if (!strcmp(a, "--strict-fp")) o->strict_fp = true;
    else if ((v = opt_value(argc, argv, &i, "--check-ulps"))) {
      long long u;
      if (!parse_int(v, &u) || u < 0 || u > 1000000000) return bad_usage("bad --check-ulps '%s'", v);
      o->check_ulps = (int)u;
    }
    else if ((v = opt_value(argc, argv, &i, "--seed"))) {
      /* any 64-bit unsigned seed (tdsl_init takes one), as PyTorch's manual_seed */
      char *end;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 10);
      if (errno || end == v || *end || v[strspn(v, " \t")] == '-' || v[0] == '+') return bad_usage("bad --seed '%s'", v);
      o->seed = s;
      seeded = true;
    } else if ((v = opt_value(argc, argv, &i, "--set"))) {
      const char *eq = strchr(v, '=');
      long long val;
      if (!eq || eq == v || !parse_int(eq + 1, &val)) {
        /* digits that do not fit read as a malformed option: say it is the size */
        const char *num = eq ? eq + 1 + (eq[1] == '-') : "";
        bool digits = *num && strspn(num, "0123456789") == strlen(num);
        return bad_usage(digits && eq != v ? "bad --set '%s' (the value is out of range)"
                                           : "bad --set '%s' (expected NAME=INT)",
                         v);
      }
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
    } else if ((v = opt_value(argc, argv, &i, "--call"))) {
      if (empty_value("--call", v, "a routine name")) return 2;
      vec_push(&c->arena, &o->calls, (void *)v);
    } else if ((v = opt_value(argc, argv, &i, "--print"))) {
      if (empty_value("--print", v, "a tensor name")) return 2;
      vec_push(&c->arena, &o->prints, (void *)v);
    } else if ((v = opt_value(argc, argv, &i, "--save"))) {
      if (empty_value("--save", v, "a file name")) return 2;
      o->save = v;
    } else if ((v = opt_value(argc, argv, &i, "--load-checkpoint"))) {
      if (empty_value("--load-checkpoint", v, "a file name")) return 2;
      o->load_ckpt = v;
    }
    else if (!strcmp(a, "-MD")) o->md = true;
    else if (!strcmp(a, "-MF")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      if (empty_value(a, argv[i], "a file name")) return 2;
      o->mf = argv[i];
      o->md = true;
    }
    else if (!strncmp(a, "-MF", 3)) { /* -MFFILE, as gcc */
      o->mf = a + 3;
      o->md = true;
    }
    else if (a[0] == '-' && a[1]) return bad_option(a);
    else if (o->input) return bad_usage("more than one input file ('%s')", a);
    else o->input = a;
  }
  if (!o->input) {
    /* `tdslc --run --print model.tdsl`: the option took the file as its argument */
    const PtrVec *named[2] = {&o->prints, &o->calls};
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < named[k]->len; i++) {
        const char *v = named[k]->items[i];
        size_t n = strlen(v);
        if (n > 5 && !strcmp(v + n - 5, ".tdsl"))
          return bad_usage(k ? "no input file (--call took '%s' as its argument: give it a routine name)"
                             : "no input file (--print took '%s' as its argument: give it a tensor name)",
                           v);
      }
    return bad_usage("%s", "no input file");
  }
  int rc = check_modes(o, mode_by ? mode_by : "compiling", arch_given);
  if (rc) return rc;
  bool runs = o->action == ACT_RUN || o->action == ACT_CHECK;
  if (!runs && (o->sets.len || o->loads.len || seeded))
    return bad_usage("%s", "--seed/--set/--load need --run or --check");
  if (o->action != ACT_RUN && (o->calls.len || o->prints.len || o->save || o->load_ckpt))
    return bad_usage("%s", "--call/--print/--save/--load-checkpoint need --run");
  if (o->action != ACT_CHECK && o->check_ulps >= 0) return bad_usage("%s", "--check-ulps needs --check");
  if (o->verbose && o->action != ACT_DUMP_SHAPES) return bad_usage("%s", "--verbose needs --dump-shapes");
  if (o->md && o->action != ACT_COMPILE && o->action != ACT_EMIT_PTX)
    return bad_usage("%s", "-MD/-MF need a compiled output (not --run, --dump-* or --emit-c/--emit-cuda)");
  return 0;
}

/* "-" names the standard output for -o, --emit-header, -MF and --save (as gcc's -o -
 * and -MF -). It is refused where the mode prints there itself (the two would mix),
 * where a dependency file would have to name the output, and for a binary (a library,
 * an object, a checkpoint) when the standard output is a terminal, as LLVM's tools
 * refuse: the bytes would only garble it. */
static int stdout_outputs(const Options *o) {
  bool compiles = o->action == ACT_COMPILE || o->action == ACT_EMIT_PTX;
  bool out = compiles && o->output && !strcmp(o->output, "-");
  bool hdr = o->emit_header && !strcmp(o->emit_header, "-");
  bool save = o->save && !strcmp(o->save, "-");
  if (hdr && !compiles) {
    diag_tool_error("--emit-header - is for compiling (-o, -c, --emit-ptx): this mode prints its own output there");
    return 2;
  }
  if (save && o->prints.len) {
    diag_tool_error("--save - and --print both write the standard output");
    return 2;
  }
  if (out && o->md && !o->mf) {
    diag_tool_error("-MD names the dependency file after the output: with -o - give it with -MF FILE");
    return 2;
  }
  if ((out && o->action == ACT_COMPILE) || save) {
    if (isatty(STDOUT_FILENO)) {
      diag_tool_error("%s - would write %s to a terminal: redirect the standard output", save ? "--save" : "-o",
                      save ? "a checkpoint" : o->object ? "an object file" : "a shared library");
      return 2;
    }
  }
  return 0;
}

/* An output that is the input would destroy the source (gcc refuses too), and two
 * outputs naming one file would overwrite each other. */
static int check_outputs(const Options *o) {
  const char *outs[4] = {o->output, o->emit_header, o->mf, o->save}, *opts[4] = {"-o", "--emit-header", "-MF", "--save"};
  for (int i = 0; i < 4; i++) {
    if (outs[i] && same_file(outs[i], o->input)) {
      diag_tool_error("%s '%s' is the input file", opts[i], outs[i]);
      return 2;
    }
    /* A checkpoint saved over a --load file would replace an input (saving back to the
     * --load-checkpoint file is resuming, and allowed). */
    for (int k = 0; outs[i] && k < o->loads.len; k++)
      if (same_file(outs[i], ((RunLoad *)o->loads.items[k])->path)) {
        diag_tool_error("%s '%s' is the --load file of %s", opts[i], outs[i],
                ((RunLoad *)o->loads.items[k])->tensor);
        return 2;
      }
    for (int k = 0; k < i; k++)
      if (outs[i] && outs[k] && !strcmp(outs[i], "-") && !strcmp(outs[k], "-")) {
        diag_tool_error("%s - and %s - both write the standard output", opts[k], opts[i]);
        return 2;
      } else if (outs[i] && outs[k] && (!strcmp(outs[i], outs[k]) || same_file(outs[i], outs[k]))) {
        diag_tool_error("%s and %s name the same file '%s'", opts[k], opts[i], outs[i]);
        return 2;
      }
  }
  return stdout_outputs(o);
}

static const char *dirname_of(Arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return ".";
  return arena_strndup(a, path, (size_t)(slash - path));
}


static void jit_mark(void *c, const char *phase) { timing_mark(c, phase); }

static JitOpts jit_opts(Ctx *c) {
  const JitTarget *host = jit_host_target_once(&c->arena, &c->host);
  JitOpts o = {.mark = jit_mark, .mark_arg = c, .name = ctx_model_name(c), .opt_level = c->opt.opt_level, .check_bounds = c->opt.check_bounds, .native = true, .schedule = true,
               .strict_fp = c->opt.strict_fp, .target = host};
  return o;
}

/* -o, else <model>.EXT (EXT NULL: so, or o with -c). */
static const char *out_path(Ctx *c, const char *ext) {
  if (c->opt.output) return c->opt.output;
  return arena_printf(&c->arena, "%s.%s", ctx_model_base(c), ext ? ext : c->opt.object ? "o" : "so");
}

static CudaOpts cuda_opts(Ctx *c) {
  Options *o = &c->opt;
  CudaOpts co = {.arch = o->arch, .opt_level = o->opt_level, .object = o->object,
                 .header = o->emit_header, .model = ctx_model_name(c), .tf32 = o->tf32, .strict_fp = o->strict_fp};
  co.out = o->action == ACT_EMIT_CUDA ? CUDA_OUT_SOURCE : o->action == ACT_EMIT_PTX ? CUDA_OUT_PTX : CUDA_OUT_LIBRARY;
  if (co.out != CUDA_OUT_SOURCE) co.output = out_path(c, co.out == CUDA_OUT_PTX ? "ptx" : NULL);
  return co;
}

static const char *cache_key(Ctx *c, const IrModule *m, const JitOpts *jo);

/* -j, else the online cores. */
static int jobs_of(const Options *o) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return o->jobs ? o->jobs : cores > 0 ? (int)cores : 1;
}

/* --run of a model large enough to split: compiled as for a .so (in parallel, each group
 * cached) into a scratch file the runtime opens. PCOMPILE_SERIAL when not split. */
static int run_split(Ctx *c, IrModule *m) {
  JitOpts jo = jit_opts(c);
  const char *t = getenv("TMPDIR");
  char *dir = arena_printf(&c->arena, "%s/tdslc-run-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir)) return PCOMPILE_SERIAL;
  const char *so = arena_printf(&c->arena, "%s/model.so", dir);
  int rc = pcompile(c, m, &jo, false, c->opt.no_cache ? NULL : cache_key(c, NULL, &jo), jobs_of(&c->opt), so);
  if (!rc) rc = run_jit_file(c, so);
  unlink(so);
  rmdir(dir);
  return rc;
}

/* --run: compiled by the chosen backend (in memory unless split), then run through the
 * runtime. */
static int run_in_process(Ctx *c, IrModule *m) {
  if (c->opt.backend == BACKEND_CC && !c->opt.no_split) {
    int rc = run_split(c, m);
    if (rc != PCOMPILE_SERIAL) return rc;
  }
  JitOpts jo = jit_opts(c);
  CudaOpts co = cuda_opts(c);
  gcc_jit_context *jc = NULL;
  gcc_jit_result *r = c->opt.backend == BACKEND_CUDA ? cuda_compile_mem(&c->arena, m, &co, &jc)
                                                     : jit_compile_mem(&c->arena, m, &jo, &jc);
  if (!r) return 2; /* reported: the toolchain or tdslc failed, not the input */
  int rc = run_jit_result(c, r);
  gcc_jit_result_release(r);
  gcc_jit_context_release(jc);
  return rc;
}

/* What every cache key starts with: the compiler's identity and the options. */
static void key_head(FILE *f, Ctx *c, const JitOpts *jo, const char *self) {
  const char *arch = jo->target && jo->target->arch ? jo->target->arch : "-";
  const char *isa = jo->target && jo->target->isa ? jo->target->isa : "-";
  fprintf(f, "tdslc %s %s gccjit %d.%d.%d\nO%d bounds %d object %d native %d arch %s isa %s schedule %d strict %d\n",
          TDSLC_VERSION, self, gcc_jit_version_major(), gcc_jit_version_minor(), gcc_jit_version_patchlevel(),
          jo->opt_level, jo->check_bounds, c->opt.object, jo->native, arch, isa, jo->schedule, jo->strict_fp);
}

/* Everything a compiled file depends on: the cache key (src/cache.c); m NULL: only the
 * head (a split compile adds each group's own part). */
static const char *cache_key(Ctx *c, const IrModule *m, const JitOpts *jo) {
  const char *self = cache_self_id(&c->arena);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = self ? open_memstream(&buf, &len) : NULL;
  if (!f) return NULL;
  key_head(f, c, jo, self);
  if (m) {
    ir_print(f, m);
    fputs(ir_metadata(&c->arena, m, jo->name), f);
  }
  fclose(f);
  char *key = arena_strdup(&c->arena, buf);
  free(buf);
  return key;
}

/* The .so/.o through a temporary renamed on success (outfile.h). */
static int compile_file(Ctx *c, IrModule *m, const char *out) {
  if (same_file(out, c->opt.input)) {
    diag_tool_error("the output '%s' is the input file", out);
    return 2;
  }
  OutFile of;
  if (!out_begin(&c->arena, &of, out)) return 2;
  /* TDSLC_TEST_LIB_STOP=abort|exit (tests only): what libgccjit does out of memory */
  const char *stop = getenv("TDSLC_TEST_LIB_STOP");
  if (stop && !strcmp(stop, "abort")) abort();
  if (stop && !strcmp(stop, "exit")) exit(1);
  JitOpts jo = jit_opts(c);
  const Options *o = &c->opt;
  int rc = o->no_split ? PCOMPILE_SERIAL
                       : pcompile(c, m, &jo, o->object, o->no_cache ? NULL : cache_key(c, NULL, &jo), jobs_of(o), of.tmp);
  if (rc != PCOMPILE_SERIAL) {
    if (rc) out_discard(&of);
    return rc ? rc : out_commit(&of) ? 0 : 2;
  }
  const char *key = o->no_cache ? NULL : cache_key(c, m, &jo);
  const char *entry = key && !of.direct ? cache_entry(&c->arena, key, o->object ? "o" : "so") : NULL;
  if (entry) {
    CacheResult r = cache_fetch(entry, of.tmp);
    timing_mark(c, r == CACHE_HIT ? "cache hit" : r == CACHE_BAD ? "cache entry bad (rebuilt)" : "cache miss");
    if (r == CACHE_HIT) return out_commit(&of) ? 0 : 2;
  }
  TimingWatch *w = timing_watch(c, arena_printf(&c->arena, "compiling %s (gcc -O%d)", o->input, o->opt_level));
  bool ok = jit_compile_file(&c->arena, m, &jo, of.tmp, o->object);
  guard_rearm();
  timing_unwatch(w);
  if (!ok) { /* reported (jit_report_failure): not the input's fault */
    out_discard(&of);
    return 2;
  }
  if (entry && cache_store(entry, of.tmp)) timing_mark(c, "cache store");
  return out_commit(&of) ? 0 : 2;
}

/* The header describes the module as the back end compiles it: the CPU one compiles the
 * scheduled module, whose routines fusion rewrote (their lowered parts have no code
 * left), so the header's inline routines must list its calls; the CUDA one compiles m. */
static int write_header(Ctx *c, IrModule *m, OutFile *hdr) {
  if (!out_begin(&c->arena, hdr, c->opt.emit_header)) return 2;
  FILE *f = out_fopen(hdr);
  if (!f) return 2;
  const IrModule *shown = m;
  if (c->opt.backend != BACKEND_CUDA) {
    JitOpts jo = jit_opts(c);
    shown = jit_prepare(&c->arena, m, &jo, jo.native);
  }
  emit_header(f, shown, ctx_model_name(c), NULL);
  if (fclose(f)) {
    diag_tool_error("cannot write %s: %s", out_name(&c->arena, hdr), strerror(errno));
    return 2;
  }
  return 0;
}

/* The cuda driver (backends/cuda/) handles these modes itself, --emit-header included. */
static bool cuda_driver_mode(const Options *o) {
  bool cuda = o->backend == BACKEND_CUDA || o->action == ACT_EMIT_CUDA || o->action == ACT_EMIT_PTX;
  return cuda && o->action != ACT_RUN && o->action != ACT_CHECK && o->action != ACT_DUMP_IR && o->action != ACT_EMIT_C;
}

/* The cuda driver's files (.so/.o or --emit-ptx, and --emit-header) are written to
 * temporaries that are renamed over the paths only once all succeeded (outfile.h). */
static int cuda_files(Ctx *c, IrModule *m) {
  CudaOpts co = cuda_opts(c);
  if (co.output && same_file(co.output, c->opt.input)) {
    diag_tool_error("the output '%s' is the input file", co.output);
    return 2;
  }
  OutFile out = {0}, hdr = {0};
  int rc = co.output && !out_begin(&c->arena, &out, co.output) ? 2 : 0;
  if (!rc && co.header && !out_begin(&c->arena, &hdr, co.header)) rc = 2;
  if (!rc) {
    if (out.tmp) co.output = out.tmp;
    if (hdr.tmp) co.header = hdr.tmp;
    rc = cuda_backend(&c->arena, m, &co);
  }
  if (!rc && out.tmp && !out_commit(&out)) rc = 2;
  if (!rc && hdr.tmp && !out_commit(&hdr)) rc = 2;
  out_discard(&out);
  out_discard(&hdr);
  return rc;
}

static int dispatch(Ctx *c, IrModule *m) {
  Options *o = &c->opt;
  /* the vectors the gccjit build of this host uses (jit_prepare) */
  SchedOpts so = {.strict_fp = o->strict_fp, .check_bounds = o->check_bounds, .gpu = o->backend == BACKEND_CUDA, .vec_bytes = jit_host_target_once(&c->arena, &c->host)->vec_bytes};
  /* The CUDA back end renders the schedule's fusion across each routine's callees
   * (fills sunk or gone, adjacent nests fused) and maps the nests onto threads itself;
   * --check compares against the naive nests. */
  if (o->backend == BACKEND_CUDA && o->action != ACT_CHECK) m = sched_fuse_routines(&c->arena, m, &so);
  if (cuda_driver_mode(o)) return cuda_files(c, m);
  if (o->backend == BACKEND_CUDA && o->action == ACT_RUN && !cuda_can_run()) return 2;
  /* What the CPU back ends render: the scheduled IR. */
  IrModule *shown = o->backend == BACKEND_CUDA ? m : sched_module(&c->arena, m, &so);
  switch (o->action) {
  case ACT_DUMP_IR: ir_print(stdout, shown); return 0;
  case ACT_EMIT_C: emit_c(stdout, shown, o->check_bounds, o->strict_fp, ctx_model_name(c)); return 0;
  case ACT_RUN: return run_in_process(c, m);
  case ACT_CHECK: return check_model(c, m);
  default: break;
  }
  return compile_file(c, m, out_path(c, NULL));
}

/* After inference: lower to the loop IR, then --dump-ir, --emit-c, compile to a .so/.o
 * (+ --emit-header, -MD), or --run in process. The header and the dependency file are
 * committed with the main output, only when everything succeeded; their temporaries
 * exist from the start, so an unwritable one fails before any output is replaced.
 * Returns a process exit status. */
/* An output that is a file the model read (an `open`ed source, a data file) would
 * replace an input; known only after staging, so checked here, before any write. */
static int check_read_files(Ctx *c, const char *target) {
  const Options *o = &c->opt;
  bool writes = o->action == ACT_COMPILE || o->action == ACT_EMIT_PTX;
  const char *outs[4] = {writes ? out_path(c, o->action == ACT_EMIT_PTX ? "ptx" : NULL) : NULL, o->emit_header,
                         target ? depfile_path(c, target) : NULL, o->action == ACT_RUN ? o->save : NULL};
  const char *opts[4] = {"the output", "--emit-header", "the dependency file", "--save"};
  for (int i = 0; i < 4; i++)
    for (int k = 0; outs[i] && k < c->deps.len; k++)
      if (same_file(outs[i], c->deps.items[k])) {
        diag_tool_error("%s '%s' is %s", opts[i], outs[i],
                same_file(outs[i], o->input) ? "the input file" : "a file the model reads");
        return 2;
      }
  return 0;
}

static int generate_in(Ctx *c, Graph *g);

/* guard.h: an abort or exit of libgccjit's, or an interrupt, while code is generated
 * leaves no temporary behind. */
static int generate(Ctx *c, Graph *g) {
  guard_begin();
  int rc = generate_in(c, g);
  guard_end();
  return rc;
}

static int generate_in(Ctx *c, Graph *g) {
  Options *o = &c->opt;
  IrModule *m = lower_graph(&c->arena, &c->diag, g, o->double_prec);
  timing_mark(c, "lowering");
  if (!m || c->diag.errors) return 1;
  OutFile hdr = {0}, dep = {0};
  const char *target = o->md ? out_path(c, o->action == ACT_EMIT_PTX ? "ptx" : NULL) : NULL;
  if (check_read_files(c, target)) return 2;
  int rc = o->emit_header && !cuda_driver_mode(o) ? write_header(c, m, &hdr) : 0;
  if (!rc && target && same_file(depfile_path(c, target), o->input)) {
    diag_tool_error("the dependency file '%s' is the input file", depfile_path(c, target));
    rc = 2;
  }
  if (!rc && target && !out_begin(&c->arena, &dep, depfile_path(c, target))) rc = 2;
  if (!rc) rc = dispatch(c, m);
  if (!rc && target) rc = write_depfile(c, target, dep.tmp);
  if (!rc && hdr.tmp && !out_commit(&hdr)) rc = 2;
  if (!rc && dep.tmp && !out_commit(&dep)) rc = 2;
  out_discard(&hdr);
  out_discard(&dep);
  return rc;
}

static int run(Ctx *c) {
  SrcFile *f = ctx_read_input(c);
  if (!f) {
    diag_tool_error("cannot read '%s': %s", c->opt.input, strerror(errno));
    return 2;
  }
  Program *p = parse_program(&c->arena, &c->diag, f);
  timing_mark(c, "parse");
  if (!p || c->diag.errors) return 1;
  if (c->opt.action == ACT_DUMP_AST) {
    ast_print_program(stdout, p);
    return 0;
  }
  Graph *g = stage_program(c, p);
  timing_mark(c, "staging");
  if (!g || c->diag.errors) return 1;
  c->graph = g;
  if (c->opt.action == ACT_DUMP_GRAPH) {
    graph_print(stdout, g);
    return 0;
  }
  bool inferred = infer_shapes(c, g) && !c->diag.errors;
  timing_mark(c, "shape inference");
  if (c->opt.action == ACT_DUMP_SHAPES) { /* after errors: what was inferred, `?` unknown */
    dump_shapes_ex(stdout, g, c->opt.json, c->opt.verbose);
    return inferred ? 0 : 1;
  }
  if (!inferred) return 1;
  bool ok = infer_projections(c, g);
  timing_mark(c, "projection inference");
  if (!ok || c->diag.errors) return 1;
  if (c->opt.action == ACT_DUMP_PROJECTIONS) {
    dump_projections(stdout, g, c->opt.json);
    return 0;
  }
  return generate(c, g);
}

int main(int argc, char **argv) {
  Ctx c;
  memset(&c, 0, sizeof c);
  diag_init(&c.diag, stderr);
  int rc = parse_args(&c, argc, argv);
  if (!rc) rc = check_outputs(&c.opt);
  if (rc) {
    arena_free(&c.arena);
    return rc;
  }
  /* /proc/self/exe finds the real binary whether run by path, through PATH or a link. */
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) buf[n] = 0;
  c.exe_dir = dirname_of(&c.arena, n > 0 ? buf : argv[0]);
  guard_install();
  timing_start(&c);
  rc = finish_stdout(run(&c));
  if (c.opt.time_report) timing_report(&c);
  arena_free(&c.arena);
  return rc;
}
