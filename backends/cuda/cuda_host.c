/* cuda_host.c: the host side of a cuda model, built with libgccjit like a CPU model:
 * the same instance layout and metadata (the buffers are the host mirrors the runtime
 * copies to and from the device), the PTX and the kernel table as data, and one
 * NAME_fn_N per function that launches its kernels in order through the launch
 * function in its instance's header (see cuda.h). */
#include <string.h>

#include "cuda.h"
#include "jit.h"

typedef struct H {
  Arena *a;
  gcc_jit_context *c;
  gcc_jit_type *t_void, *t_int, *t_char, *t_voidp;
} H;

/* char NAME[] = text, exported. */
static void text_global(H *h, const char *name, const char *text) {
  size_t n = strlen(text) + 1;
  gcc_jit_type *at = gcc_jit_context_new_array_type(h->c, NULL, h->t_char, (int)n);
  gcc_jit_lvalue *g = gcc_jit_context_new_global(h->c, NULL, GCC_JIT_GLOBAL_EXPORTED, at, name);
  gcc_jit_global_set_initializer(g, text, n);
}

static gcc_jit_context *build(Arena *a, const IrModule *m, const CudaPlan *p, const char *ptx, const char *name, int opt_level,
                               bool object) {
  H hh = {.a = a};
  H *h = &hh;
  h->c = jit_context_acquire();
  gcc_jit_context_set_int_option(h->c, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, opt_level > 1 ? 1 : opt_level);
  gcc_jit_context_set_bool_option(h->c, GCC_JIT_BOOL_OPTION_DEBUGINFO, 0);
  h->t_void = gcc_jit_context_get_type(h->c, GCC_JIT_TYPE_VOID);
  h->t_int = gcc_jit_context_get_type(h->c, GCC_JIT_TYPE_INT);
  h->t_char = gcc_jit_context_get_type(h->c, GCC_JIT_TYPE_CHAR);
  h->t_voidp = gcc_jit_context_get_type(h->c, GCC_JIT_TYPE_VOID_PTR);

  /* Kernels do not check bounds: the instance's fault word (jit.h) stays 0. */
  JitInstance in = jit_instance_type(a, h->c, m);
  jit_export_meta(a, h->c, name, arena_printf(a, "%scuda\n", ir_metadata(a, m, name)), object);
  text_global(h, arena_printf(a, "%s_cuda_ptx", name), ptx);
  text_global(h, arena_printf(a, "%s_cuda_meta", name), p->meta);

  gcc_jit_type *lp[2] = {h->t_voidp, h->t_int};
  gcc_jit_type *launch_t = gcc_jit_context_new_function_ptr_type(h->c, NULL, h->t_void, 2, lp, 0);

  gcc_jit_function **fns = ANEWN(a, gcc_jit_function *, m->funcs.len + 1);
  gcc_jit_param **self = ANEWN(a, gcc_jit_param *, m->funcs.len + 1);
  for (int i = 0; i < m->funcs.len; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (f->seq) continue; /* the runtime walks its list through NAME_call */
    self[i] = gcc_jit_context_new_param(h->c, NULL, in.ptr, "self");
    fns[i] = gcc_jit_context_new_function(h->c, NULL, f->exported ? GCC_JIT_FUNCTION_EXPORTED : GCC_JIT_FUNCTION_INTERNAL,
                                          h->t_void, arena_printf(a, "%s_fn_%d", name, i), 1, &self[i], 0);
  }
  jit_export_dispatch(a, h->c, m, name, &in, fns);
  for (int i = 0; i < m->funcs.len; i++) {
    if (!fns[i]) continue;
    gcc_jit_block *b = gcc_jit_function_new_block(fns[i], "entry");
    gcc_jit_rvalue *me = gcc_jit_param_as_rvalue(self[i]);
    /* The runtime's slots in the instance header: its context and launch function. */
    gcc_jit_rvalue *hdr = gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference_field(me, NULL, in.header));
    gcc_jit_rvalue *ctx = gcc_jit_lvalue_as_rvalue(
        gcc_jit_context_new_array_access(h->c, NULL, hdr, gcc_jit_context_new_rvalue_from_int(h->c, h->t_int, 0)));
    gcc_jit_rvalue *launch = gcc_jit_context_new_bitcast(
        h->c, NULL,
        gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(h->c, NULL, hdr, gcc_jit_context_new_rvalue_from_int(h->c, h->t_int, 1))),
        launch_t);
    for (int k = 0; k < p->steps[i].len; k++) {
      const CudaStep *st = p->steps[i].items[k];
      if (st->call) {
        gcc_jit_block_add_eval(b, NULL, gcc_jit_context_new_call(h->c, NULL, fns[st->index], 1, &me));
        continue;
      }
      gcc_jit_rvalue *args[2] = {ctx, gcc_jit_context_new_rvalue_from_int(h->c, h->t_int, st->index)};
      gcc_jit_block_add_eval(b, NULL, gcc_jit_context_new_call_through_ptr(h->c, NULL, launch, 2, args));
    }
    gcc_jit_block_end_with_void_return(b, NULL);
  }
  return h->c;
}


bool cuda_host_file(Arena *a, const IrModule *m, const CudaPlan *p, const char *ptx, const char *name, int opt_level,
                    const char *path, bool object) {
  gcc_jit_context *c = build(a, m, p, ptx, name, opt_level, object);
  gcc_jit_context_compile_to_file(c, object ? GCC_JIT_OUTPUT_KIND_OBJECT_FILE : GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, path);
  bool ok = gcc_jit_context_get_first_error(c) == NULL || jit_report_failure(c, "host code generation");
  gcc_jit_context_release(c);
  return ok;
}

gcc_jit_result *cuda_host_mem(Arena *a, const IrModule *m, const CudaPlan *p, const char *ptx, const char *name,
                              int opt_level, gcc_jit_context **ctx_out) {
  gcc_jit_context *c = build(a, m, p, ptx, name, opt_level, false);
  gcc_jit_result *r = gcc_jit_context_compile(c);
  if (!r) {
    jit_report_failure(c, "host code generation");
    gcc_jit_context_release(c);
    return NULL;
  }
  *ctx_out = c;
  return r;
}
