/* jit.c: the module layer of the gccjit backend: one context per model, the exported
 * storage (buffers, index symbols), functions and metadata, compiling to a file or to
 * memory. Function bodies come from the statement renderer (jit_stmt.c). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_emit.h"
#include "schedule.h"

/* Whether word is one of the space-separated words of list. */
static bool has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *s = list; s && (s = strstr(s, word)); s += n)
    if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == 0)) return true;
  return false;
}

/* The vector width the flags let gcc use: the schedule must not pick wider vectors than
 * the target has, or gcc lowers each vector operation to scalar code. */
static int isa_vec_bytes(const char *isa) {
  if (has_word(isa, "-mavx512f")) return 64;
  if (has_word(isa, "-mavx") || has_word(isa, "-mavx2")) return 32;
  return 16;
}

/* The host CPU as the gcc driver sees it (libgccjit rejects -march=native): its -march
 * and every -m flag -march=native expands to. The flags matter: a gcc older than the CPU
 * names the nearest -march it knows (gcc 12 calls an AVX-512 Zen 4 znver3, which has no
 * AVX-512) and adds the CPU's own features as flags (-mavx512f ...). */
JitTarget jit_host_target(Arena *a) {
  JitTarget t = {.vec_bytes = 16};
  FILE *p = popen("gcc -### -E -march=native -x c /dev/null 2>&1", "r");
  if (!p) return t;
  char line[16384];
  while (fgets(line, sizeof line, p)) {
    if (!strstr(line, "-march=")) continue;
    char *isa = ANEWN(a, char, strlen(line) + 1); /* the flags, space-separated */
    size_t len = 0;
    for (char *s = line; *s;) {
      while (*s == ' ' || *s == '\n') s++;
      char *b = s;
      while (*s && *s != ' ' && *s != '\n') s++;
      if (*b == '"') b++; /* gcc -### quotes some words */
      char *e = s > b && s[-1] == '"' ? s - 1 : s;
      if (e - b > 7 && !strncmp(b, "-march=", 7) && strncmp(b + 7, "native", 6)) t.arch = arena_strndup(a, b + 7, (size_t)(e - b - 7));
      else if (e - b > 2 && b[0] == '-' && b[1] == 'm' && strncmp(b, "-mtune=", 7) && strncmp(b, "-march=", 7)) {
        if (len) isa[len++] = ' ';
        memcpy(isa + len, b, (size_t)(e - b));
        len += (size_t)(e - b);
        isa[len] = 0;
      }
    }
    if (t.arch) {
      t.isa = len ? isa : NULL;
      break;
    }
  }
  pclose(p);
  /* -march alone, whose features the driver did not list: plain x86-64 vectors */
  if (t.arch && t.isa) t.vec_bytes = isa_vec_bytes(t.isa);
  return t;
}

const JitTarget *jit_host_target_once(Arena *a, const JitTarget **slot) {
  if (!*slot) {
    JitTarget *t = ANEW(a, JitTarget);
    *t = jit_host_target(a);
    *slot = t;
  }
  return *slot;
}

const char *jit_name(const char *name) { return name ? name : "tdsl"; }

gcc_jit_lvalue *jm_fault(J *j) { return gcc_jit_rvalue_dereference_field(j->self, NULL, j->inst.fault); }
gcc_jit_rvalue *jm_fault_msg(J *j) {
  gcc_jit_lvalue *first = gcc_jit_context_new_array_access(
      j->c, NULL, gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference_field(j->self, NULL, j->inst.fault_msg)),
      gcc_jit_context_zero(j->c, j->t_int));
  return gcc_jit_lvalue_get_address(first, NULL);
}

/* What a failed --check-bounds check calls to write its message into the instance. */
static void fault_snprintf(J *j) {
  gcc_jit_type *t_char = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_CHAR);
  gcc_jit_param *pp[3] = {gcc_jit_context_new_param(j->c, NULL, gcc_jit_type_get_pointer(t_char), "buf"),
                          gcc_jit_context_new_param(j->c, NULL, gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_SIZE_T), "n"),
                          gcc_jit_context_new_param(j->c, NULL, j->t_str, "fmt")};
  j->f_snprintf = gcc_jit_context_new_function(j->c, NULL, GCC_JIT_FUNCTION_IMPORTED, j->t_int, "snprintf", 3, pp, 1);
}

/* The instance header (tdsl_abi.h): the runtime's slots, the fault word, its message. */
static int header_fields(gcc_jit_context *c, JitInstance *in, gcc_jit_field **f) {
  gcc_jit_type *t_char = gcc_jit_context_get_type(c, GCC_JIT_TYPE_CHAR);
  gcc_jit_type *t_voidp = gcc_jit_context_get_type(c, GCC_JIT_TYPE_VOID_PTR);
  int n = 0;
  in->header = f[n++] = gcc_jit_context_new_field(c, NULL, gcc_jit_context_new_array_type(c, NULL, t_voidp, INST_RT_SLOTS), "rt");
  in->fault = f[n++] = gcc_jit_context_new_field(c, NULL, gcc_jit_context_get_type(c, GCC_JIT_TYPE_INT), "fault");
  f[n++] = gcc_jit_context_new_field(c, NULL, gcc_jit_context_new_array_type(c, NULL, t_char, INST_FAULT_MSG - INST_FAULT - 4),
                                     "fault_pad");
  in->fault_msg = f[n++] =
      gcc_jit_context_new_field(c, NULL, gcc_jit_context_new_array_type(c, NULL, t_char, INST_FAULT_MSG_LEN), "fault_msg");
  return n;
}

JitInstance jit_instance_type(Arena *a, gcc_jit_context *c, const IrModule *m) { return jit_instance_part(a, c, m, NULL, NULL, 0); }

JitInstance jit_instance_part(Arena *a, gcc_jit_context *c, const IrModule *m, const bool *bufs, const bool *syms, long base) {
  IrLayout l = ir_layout(a, m);
  JitInstance in = {.buf = ANEWN(a, gcc_jit_field *, m->bufs.len + 1), .sym = ANEWN(a, gcc_jit_field *, m->syms.len + 1),
                    .dim = ANEWN(a, gcc_jit_field *, m->dims.len + 1)};
  int cap = 2 * (m->bufs.len + m->syms.len + m->dims.len) + 6;
  gcc_jit_field **f = ANEWN(a, gcc_jit_field *, cap);
  gcc_jit_type *t_char = gcc_jit_context_get_type(c, GCC_JIT_TYPE_CHAR);
  gcc_jit_type *t_el[2] = {gcc_jit_context_get_type(c, GCC_JIT_TYPE_FLOAT), gcc_jit_context_get_type(c, GCC_JIT_TYPE_DOUBLE)};
  int n = base ? 0 : header_fields(c, &in, f);
  long at = base ? base : IR_INST_HEADER;
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    if (bufs && !bufs[i]) continue;
    /* Explicit padding: the layout is ir_layout's, which the runtime reads from the
     * metadata, not whatever the struct rules would give. */
    if (l.buf_off[i] > at)
      f[n++] = gcc_jit_context_new_field(c, NULL, gcc_jit_context_new_array_type(c, NULL, t_char, (int)(l.buf_off[i] - at)),
                                         arena_printf(a, "pad%d", i));
    gcc_jit_type *arr = b->dsize ? gcc_jit_type_get_pointer(t_el[b->elem]) /* the runtime allocates it */
                                 : gcc_jit_context_new_array_type(c, NULL, t_el[b->elem], (int)(ir_buf_bytes(b) / (b->elem == ELEM_F64 ? 8 : 4)));
    in.buf[i] = f[n++] = gcc_jit_context_new_field(c, NULL, arr, arena_printf(a, "b%d", i));
    at = l.buf_off[i] + ir_buf_bytes(b);
  }
  gcc_jit_type *t_int = gcc_jit_context_get_type(c, GCC_JIT_TYPE_INT);
  for (int i = 0; i < m->syms.len; i++) {
    if (syms && !syms[i]) continue;
    if (l.sym_off[i] > at)
      f[n++] = gcc_jit_context_new_field(c, NULL, gcc_jit_context_new_array_type(c, NULL, t_char, (int)(l.sym_off[i] - at)),
                                         arena_printf(a, "spad%d", i));
    in.sym[i] = f[n++] = gcc_jit_context_new_field(c, NULL, t_int, arena_printf(a, "s%d", i));
    at = l.sym_off[i] + 4;
  }
  for (int i = 0; !bufs && i < m->dims.len; i++) { /* a split compile refuses dims */
    if (l.dim_off[i] > at)
      f[n++] = gcc_jit_context_new_field(c, NULL, gcc_jit_context_new_array_type(c, NULL, t_char, (int)(l.dim_off[i] - at)),
                                         arena_printf(a, "dpad%d", i));
    in.dim[i] = f[n++] = gcc_jit_context_new_field(c, NULL, t_int, arena_printf(a, "d%d", i));
    at = l.dim_off[i] + 4;
  }
  if (!n) f[n++] = gcc_jit_context_new_field(c, NULL, t_char, "none");
  gcc_jit_struct *st = gcc_jit_context_new_struct_type(c, NULL, "tdsl_instance", n, f);
  in.ptr = gcc_jit_type_get_pointer(gcc_jit_type_get_aligned(gcc_jit_struct_as_type(st), 64));
  return in;
}

/* The text is one string literal, returned by an internal function that
 * NAME_model_meta and tdsl_model_meta call: gcc merged two equal literals in the .so,
 * but libgccjit held and compiled both, and the text grows with a model's literal
 * constants. Internal, so that the call cannot bind to another library's NAME_model_meta
 * (an executable linking a model's .o of the same NAME exports one). */
void jit_export_meta(Arena *a, gcc_jit_context *c, const char *name, const char *meta, bool object) {
  gcc_jit_type *t_str = gcc_jit_context_get_type(c, GCC_JIT_TYPE_CONST_CHAR_PTR);
  gcc_jit_function *text = gcc_jit_context_new_function(c, NULL, GCC_JIT_FUNCTION_INTERNAL, t_str,
                                                        arena_printf(a, "%s_model_meta_text", name), 0, NULL, 0);
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(text, "entry"), NULL, gcc_jit_context_new_string_literal(c, meta));
  for (int k = 0; k < (object ? 1 : 2); k++) {
    const char *sym = k ? "tdsl_model_meta" : arena_printf(a, "%s_model_meta", name);
    if (k && !strcmp(name, "tdsl")) break;
    gcc_jit_function *f = gcc_jit_context_new_function(c, NULL, GCC_JIT_FUNCTION_EXPORTED, t_str, sym, 0, NULL, 0);
    gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "entry"), NULL, gcc_jit_context_new_call(c, NULL, text, 0, NULL));
  }
}

void jit_export_dispatch(Arena *a, gcc_jit_context *c, const IrModule *m, const char *name, const JitInstance *in,
                         gcc_jit_function **fns) {
  gcc_jit_type *t_void = gcc_jit_context_get_type(c, GCC_JIT_TYPE_VOID), *t_int = gcc_jit_context_get_type(c, GCC_JIT_TYPE_INT);
  gcc_jit_param *ps[2] = {gcc_jit_context_new_param(c, NULL, in->ptr, "self"), gcc_jit_context_new_param(c, NULL, t_int, "k")};
  gcc_jit_function *d =
      gcc_jit_context_new_function(c, NULL, GCC_JIT_FUNCTION_EXPORTED, t_void, arena_printf(a, "%s_call", name), 2, ps, 0);
  gcc_jit_block *entry = gcc_jit_function_new_block(d, "entry"), *done = gcc_jit_function_new_block(d, "done");
  gcc_jit_block_end_with_void_return(done, NULL);
  bool *listed = ANEWN(a, bool, m->funcs.len + 1);
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    for (int k = 0; f->seq && k < f->body.len; k++) {
      const Stmt *s = f->body.items[k];
      for (int c = 0; s->kind == S_CALL && c < s->ncalls; c++) listed[s->callee + c] = true;
    }
  }
  gcc_jit_case **cases = ANEWN(a, gcc_jit_case *, m->funcs.len + 1);
  gcc_jit_rvalue *self = gcc_jit_param_as_rvalue(ps[0]);
  int n = 0;
  for (int i = 0; i < m->funcs.len; i++) {
    if (!listed[i]) continue;
    gcc_jit_block *b = gcc_jit_function_new_block(d, NULL);
    gcc_jit_block_add_eval(b, NULL, gcc_jit_context_new_call(c, NULL, fns[i], 1, &self));
    gcc_jit_block_end_with_jump(b, NULL, done);
    gcc_jit_rvalue *k = gcc_jit_context_new_rvalue_from_int(c, t_int, i);
    cases[n++] = gcc_jit_context_new_case(c, k, k, b);
  }
  gcc_jit_block_end_with_switch(entry, NULL, gcc_jit_param_as_rvalue(ps[1]), done, n, cases);
}

/* Where buffer or symbol fields live in the function being built: the instance, or in a
 * group of a split compile (jit_group.c) cluster c of its storage, at the instance plus
 * the cluster's base offset, read from a global so that the group's code does not change
 * when storage outside it grows or shrinks. */
static gcc_jit_rvalue *storage(J *j, int c) {
  if (!j->store) return j->self;
  gcc_jit_type *t_char = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_CHAR);
  gcc_jit_rvalue *bytes = gcc_jit_context_new_cast(j->c, NULL, j->self, gcc_jit_type_get_pointer(t_char));
  gcc_jit_lvalue *at = gcc_jit_context_new_array_access(j->c, NULL, bytes, gcc_jit_lvalue_as_rvalue(j->base_offs[c]));
  return gcc_jit_context_new_cast(j->c, NULL, gcc_jit_lvalue_get_address(at, NULL), j->parts[c].ptr);
}

gcc_jit_lvalue *jm_buf(J *j, int b) {
  int c = j->store ? j->store->buf[b] : 0;
  return gcc_jit_rvalue_dereference_field(storage(j, c), NULL, (j->store ? &j->parts[c] : &j->inst)->buf[b]);
}
gcc_jit_rvalue *jm_sym(J *j, int s) {
  int c = j->store ? j->store->sym[s] : 0;
  return gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference_field(storage(j, c), NULL, (j->store ? &j->parts[c] : &j->inst)->sym[s]));
}
gcc_jit_rvalue *jm_dim(J *j, int d) { return gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference_field(j->self, NULL, j->inst.dim[d])); }
gcc_jit_rvalue *jm_call(J *j, int callee) { return gcc_jit_context_new_call(j->c, NULL, j->funcs[callee], 1, &j->self); }

/* The module m as compiled: scheduled when the options ask for it. */
const IrModule *jit_prepare(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch) {
  if (!o->schedule) return m;
  /* without -march the target is plain x86-64: 16-byte vectors */
  int vec = 16;
  if (with_arch) vec = o->target ? o->target->vec_bytes : jit_host_target(a).vec_bytes;
  SchedOpts so = {.strict_fp = o->strict_fp, .check_bounds = o->check_bounds, .vec_bytes = vec};
  return sched_module(a, m, &so);
}

J *jit_begin(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch, int opt_level, bool whole) {
  J *j = ANEW(a, J);
  j->a = a, j->m = m, j->o = o;
  j->c = jit_context_acquire();
  gcc_jit_context_set_int_option(j->c, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, opt_level);
  gcc_jit_context_set_bool_option(j->c, GCC_JIT_BOOL_OPTION_DEBUGINFO, 0);
  /* errno from math functions is unobservable here; without it sqrt etc. vectorize. */
  gcc_jit_context_add_command_line_option(j->c, "-fno-math-errno");
  /* gcc contracts a * b + c into one fused multiply-add (GNU C's default) when it
   * optimizes for a -march with FMA: the kernels' register tiles need it (sgemm 1024 on
   * Zen 4: 67 GFLOP/s with separate multiplies and adds, 94 fused), so values at -O2/-O3
   * may differ from -O0 in that rounding (fma (a, b, c), tanh's g * (1 - v * v)), as a C
   * compiler's do. --strict-fp rounds every expression as written, bit for bit the -O0
   * values (lit fp/same.test). */
  if (o->strict_fp) gcc_jit_context_add_command_line_option(j->c, "-ffp-contract=off");
  j->vec_bytes = 16;
  if (with_arch) {
    JitTarget host = o->target ? *o->target : jit_host_target(a);
    if (host.arch) j->vec_bytes = host.vec_bytes;
    if (host.arch) {
      gcc_jit_context_add_command_line_option(j->c, arena_printf(a, "-march=%s", host.arch));
      gcc_jit_context_add_command_line_option(j->c, arena_printf(a, "-mtune=%s", host.arch));
      for (const char *s = host.isa; s && *s;) {
        const char *e = strchr(s, ' ');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        gcc_jit_context_add_command_line_option(j->c, arena_strndup(a, s, n));
        s += n + (e != NULL);
      }
    }
  }
  gcc_jit_context_add_driver_option(j->c, "-lm");
  /* Each IR function (a tensor's kernel) stays a function of its own: inlining them into
   * the routines that call them made one huge function per routine, and gcc's time grew
   * faster than linearly with it (50-layer MLP at -O2: 16 s with inlining, 3.7 s
   * without). The op helpers are always_inline, so they still fold into the loops. */
  gcc_jit_context_add_command_line_option(j->c, "-fno-inline-small-functions");
  gcc_jit_context_add_command_line_option(j->c, "-fno-inline-functions-called-once");
  /* GCC 12 bug seen here: with the kernels not inlined, ivopts rewrites a kernel's
   * stores as 0-based addresses, then ipa-modref/ipa-pure-const find the kernel free
   * of side effects and the dispatcher's call of it is deleted (a permute in double
   * at -O1/-O2 computed nothing). Those analyses only serve cross-function
   * optimizations, which the kernels do not get anyway. */
  gcc_jit_context_add_command_line_option(j->c, "-fno-ipa-modref");
  gcc_jit_context_add_command_line_option(j->c, "-fno-ipa-pure-const");
  /* At -O3 gcc unrolls small constant loops completely (up to 200 insns), then
   * SLP-vectorizes the straight-line result with permutes: a batch-10 MLP step (16x16
   * matmuls) ran 2.3x slower than with this limit. At 100 the kernels, whose packing
   * loops it still unrolls, keep their speed (sgemm 64/256, conv: within 2%); 50 or a
   * limit of 8 iterations cost them 15-30%. */
  gcc_jit_context_add_command_line_option(j->c, "--param=max-completely-peeled-insns=100");
  j->t_void = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_VOID);
  j->t_int = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_INT);
  j->t_long = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_LONG);
  j->t_bool = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_BOOL);
  j->t_str = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_CONST_CHAR_PTR);
  j->t_el[ELEM_F32] = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_FLOAT);
  j->t_el[ELEM_F64] = gcc_jit_context_get_type(j->c, GCC_JIT_TYPE_DOUBLE);

  fault_snprintf(j);
  if (whole) j->inst = jit_instance_type(a, j->c, m);
  else { /* the runtime's header only */
    bool *none = ANEWN(a, bool, m->bufs.len + m->syms.len + 1);
    j->inst = jit_instance_part(a, j->c, m, none, none, 0);
  }
  j->funcs = ANEWN(a, gcc_jit_function *, m->funcs.len + 1);
  j->self_params = ANEWN(a, gcc_jit_param *, m->funcs.len + 1);
  return j;
}

void jit_declare_func(J *j, int i, enum gcc_jit_function_kind kind) {
  j->self_params[i] = gcc_jit_context_new_param(j->c, NULL, j->inst.ptr, "self");
  j->funcs[i] = gcc_jit_context_new_function(j->c, NULL, kind, j->t_void,
                                             arena_printf(j->a, "%s_fn_%d", jit_name(j->o->name), i), 1, &j->self_params[i], 0);
}

void jit_define_func(J *j, int i) {
  const IrFunc *f = VEC_AT(j->m->funcs, IrFunc, i);
  j->fn = j->funcs[i];
  j->self = gcc_jit_param_as_rvalue(j->self_params[i]);
  j->vars = ANEWN(j->a, gcc_jit_lvalue *, f->nvars + 1);
  for (int v = 0; v < f->nvars; v++)
    j->vars[v] = gcc_jit_function_new_local(j->fn, NULL, j->t_long, arena_printf(j->a, "i%d", v));
  j->blk = js_new_block(j, j->fn);
  js_emit_stmts(j, &f->body);
  gcc_jit_block_end_with_void_return(j->blk, NULL);
}

/* The whole module in one context (the seq routines are lists the runtime walks through
 * NAME_call, not code). */
static gcc_jit_context *build(Arena *a, const IrModule *m, const JitOpts *o, bool with_arch, bool object) {
  /* scheduled for the host's vectors even when retried without its -march (correct on
   * any x86-64): the module --emit-header and the split compile describe */
  m = jit_prepare(a, m, o, o->native);
  J *j = jit_begin(a, m, o, with_arch, o->opt_level, true);
  const char *name = jit_name(o->name);
  jit_export_meta(a, j->c, name, ir_metadata(a, m, name), object);
  for (int i = 0; i < m->funcs.len; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (!f->seq) jit_declare_func(j, i, f->exported ? GCC_JIT_FUNCTION_EXPORTED : GCC_JIT_FUNCTION_INTERNAL);
  }
  jit_export_dispatch(a, j->c, m, name, &j->inst, j->funcs);
  for (int i = 0; i < m->funcs.len; i++)
    if (!VEC_AT(m->funcs, IrFunc, i)->seq) jit_define_func(j, i);
  return j->c;
}

static void mark(const JitOpts *o, const char *phase) {
  if (o->mark) o->mark(o->mark_arg, phase);
}

/* Whether an executable prog is found on PATH. */
static bool on_path(const char *prog) {
  const char *path = getenv("PATH");
  char buf[4096];
  for (const char *p = path ? path : ""; *p;) {
    size_t n = strcspn(p, ":");
    if (n && n < sizeof buf - strlen(prog) - 2) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
      if (access(buf, X_OK) == 0) return true;
    }
    p += n + (p[n] == ':');
  }
  return false;
}

gcc_jit_context *jit_context_acquire(void) {
  gcc_jit_context *c = gcc_jit_context_acquire();
  /* The gcc driver embedded in libgccjit exit()s the whole process on a fatal error (no
   * assembler or linker to run), leaving tdslc's temporaries behind with status 1. Then
   * run it as a process of its own, which fails like any other error (the embedded one
   * stays the default: it needs no gcc of libgccjit's version installed). */
  if (!on_path("as") || !on_path("ld")) gcc_jit_context_set_bool_use_external_driver(c, 1);
  gcc_jit_context_set_bool_print_errors_to_stderr(c, 0);
  return c;
}

bool jit_report_failure(gcc_jit_context *c, const char *what) {
  const char *e = gcc_jit_context_get_first_error(c);
  fprintf(stderr, "tdslc: internal error: %s failed in libgccjit%s%s\n", what, e ? ": " : "", e ? e : "");
  fputs("tdslc: note: any 'gcc' or 'ld' message above comes from the C compiler tdslc runs; check that gcc and\n"
        "tdslc: note: binutils are installed and on PATH and that TMPDIR is writable, else report a tdslc bug\n",
        stderr);
  return false;
}

bool jit_compile_file(Arena *a, const IrModule *m, const JitOpts *o, const char *path, bool object) {
  enum gcc_jit_output_kind kind = object ? GCC_JIT_OUTPUT_KIND_OBJECT_FILE : GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY;
  for (int attempt = 0; attempt < 2; attempt++) {
    bool with_arch = o->native && attempt == 0;
    gcc_jit_context *c = build(a, m, o, with_arch, object);
    mark(o, "code generation");
    gcc_jit_context_compile_to_file(c, kind, path);
    mark(o, "gcc (compile, link)");
    bool ok = gcc_jit_context_get_first_error(c) == NULL;
    if (!ok && (attempt == 1 || !with_arch)) {
      jit_report_failure(c, "code generation");
      gcc_jit_context_release(c);
      return false;
    }
    gcc_jit_context_release(c);
    if (ok) return true;
    /* An -march the embedded gcc does not know: retry for the generic target. */
  }
  return false;
}

gcc_jit_result *jit_compile_mem(Arena *a, const IrModule *m, const JitOpts *o, gcc_jit_context **ctx_out) {
  for (int attempt = 0; attempt < 2; attempt++) {
    bool with_arch = o->native && attempt == 0;
    gcc_jit_context *c = build(a, m, o, with_arch, false);
    mark(o, "code generation");
    gcc_jit_result *r = gcc_jit_context_compile(c);
    mark(o, "gcc (compile, link)");
    if (r) {
      *ctx_out = c;
      return r;
    }
    if (attempt == 1 || !with_arch) {
      jit_report_failure(c, "code generation");
      gcc_jit_context_release(c);
      return NULL;
    }
    gcc_jit_context_release(c);
  }
  return NULL;
}
