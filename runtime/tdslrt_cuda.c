/* tdslrt_cuda.c: cuda models (see tdslrt_cuda.h). The CUDA driver API is resolved with
 * dlopen/dlsym so that neither the runtime nor a model links against libcuda: a machine
 * without a GPU or driver gets an error from tdsl_open, not a link failure. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdslrt_cuda.h"

/* The few driver API types and entry points used here (cuda.h is not needed to build). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUgraph, *CUgraphExec;
typedef unsigned long long CUdeviceptr;
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };

typedef struct Drv {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                           void **, void **);
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
} Drv;

/* Driver symbol per Drv slot, in declaration order. */
static const char *const drv_names[] = {
    "cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent",
    "cuModuleLoadDataEx", "cuModuleUnload", "cuModuleGetFunction", "cuMemAlloc_v2", "cuMemFree_v2",
    "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuLaunchKernel", "cuGetErrorString", "cuFuncSetAttribute"};

/* Streams and graphs (optional: without them every launch goes to the default stream). */
typedef struct DrvGraph {
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
} DrvGraph;

static const char *const graph_names[] = {"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamBeginCapture_v2",
                                          "cuStreamEndCapture", "cuGraphInstantiateWithFlags", "cuGraphLaunch",
                                          "cuGraphExecDestroy", "cuGraphDestroy"};
enum { CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1 };

enum { SYNCED, HOST_NEWER, DEVICE_NEWER };

typedef struct CBuf {
  void *host;
  size_t bytes;
  CUdeviceptr dev;
  int state;
  bool dyn;  /* over dynamic dimensions: host and bytes come from tdsl_cuda_resize */
} CBuf;

typedef struct CArg {
  char kind; /* 'b', 'w', 's', 'd', 'x' */
  int index;
} CArg;

/* A factor of a thread count: ceil(num * the dims' values / div). */
typedef struct CCeil {
  long num, div;
  int n;
  int *dims;
} CCeil;

typedef struct CKernel {
  CUfunction fn;
  long threads;  /* times the values of the dims tdims, times each ceil factor */
  int nargs, ntdims, nceils;
  CArg *args;
  int *tdims;
  int smem;      /* bytes of dynamic shared memory */
  CCeil *ceils;
} CKernel;

/* A routine replayed as one CUDA graph. Its first call runs launch by launch and
 * records which buffers its kernels use; the next call is captured into a graph (the
 * launches go into it instead of running), instantiated and launched; later calls
 * launch the graph, after copying to the device the buffers the host changed. Kernel
 * arguments and grid sizes are captured by value, so a call with other index symbol
 * or dynamic dimension values captures again, and so does one after a buffer it uses
 * was reallocated for new dimensions; a routine captured too often runs launch by
 * launch for good. */
typedef struct CRoutine {
  int calls, captures;
  bool no_graph;
  char *uses;  /* per buffer: 0, 'b' (read) or 'w' (written) by the routine's kernels */
  int *syms;   /* the symbol values, then the dim values, the graph was captured with */
  CUgraph graph;
  CUgraphExec exec;
} CRoutine;

enum { MAX_CAPTURES = 4 };

struct tdsl_cuda {
  void *lib;       /* libcuda.so.1, or NULL when emulating */
  Drv d;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  bool have_ctx;
  int nbufs, nsyms, ndims, nkernels;
  CBuf *bufs;
  CUdeviceptr scratch; /* for split reductions (the 'x' argument) */
  int **syms;
  int **dims;      /* the instance's dynamic dimensions and flags (the 'd' arguments) */
  CKernel *kernels;
  void **ctx_slot; /* the model's tdsl_cuda_ctx */
  DrvGraph g;
  bool graphs;     /* the driver has streams and graphs, and TDSL_CUDA_GRAPHS is not 0 */
  bool trace;      /* TDSL_CUDA_TRACE: say on stderr when a routine is captured or replayed */
  CUstream stream; /* every launch (NULL: the default stream) */
  int nroutines;
  CRoutine *routines;
  CRoutine *cur;       /* the routine being called (its launches record their buffers) */
  CRoutine *capturing; /* the routine being captured */
  /* The first error of a launch or copy. It is sticky: after an illegal access the CUDA
   * context is unusable and every buffer may be stale, so every later call, read or
   * write of the model fails with it instead of returning stale data. */
  char err[512];
  long launches;   /* emulation: launches so far, for fault injection */
  long fault_at;   /* emulation: TDSL_CUDA_EMULATE_FAULT=N fails the Nth launch */
};

static int say(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && n) vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *cu_str(const tdsl_cuda *cu, CUresult r) {
  const char *s = NULL;
  if (cu->d.GetErrorString && cu->d.GetErrorString(r, &s) == 0 && s) return s;
  return "unknown CUDA error";
}

/* ---- emulation: host memory and host-compiled kernels ---- */

static CUresult emu_ok0(unsigned x) { (void)x; return 0; }
static CUresult emu_device(CUdevice *d, int i) { *d = i; return 0; }
static CUresult emu_retain(CUcontext *c, CUdevice d) { (void)d; *c = NULL; return 0; }
static CUresult emu_release(CUdevice d) { (void)d; return 0; }
static CUresult emu_set(CUcontext c) { (void)c; return 0; }
static CUresult emu_load(CUmodule *m, const void *ptx, unsigned n, int *o, void **v) {
  (void)o, (void)v, (void)n;
  const char *lib = getenv("TDSL_CUDA_EMULATE");
  if (!ptx || !*(const char *)ptx || !lib) return 218; /* CUDA_ERROR_INVALID_PTX */
  *m = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  return *m ? 0 : 200; /* CUDA_ERROR_INVALID_IMAGE */
}
static CUresult emu_unload(CUmodule m) { return dlclose(m) ? 1 : 0; }
static CUresult emu_function(CUfunction *f, CUmodule m, const char *name) {
  char sym[128];
  snprintf(sym, sizeof sym, "tdsl_emu_%s", name);
  *f = dlsym(m, sym);
  return *f ? 0 : 500; /* CUDA_ERROR_NOT_FOUND */
}
static CUresult emu_alloc(CUdeviceptr *p, size_t n) {
  if (!n) return 1; /* the driver's CUDA_ERROR_INVALID_VALUE: the runtime must not ask */
  void *m = calloc(1, n);
  *p = (CUdeviceptr)(uintptr_t)m;
  return m ? 0 : 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}
static CUresult emu_free(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
static CUresult emu_htod(CUdeviceptr d, const void *h, size_t n) { memcpy((void *)(uintptr_t)d, h, n); return 0; }
static CUresult emu_dtoh(void *h, CUdeviceptr d, size_t n) { memcpy(h, (void *)(uintptr_t)d, n); return 0; }
/* An emulated graph: its launches with their arguments copied (8 bytes each: launch()
 * passes 8-byte slots and ends the list with NULL), run in order by a graph launch. A
 * stream being captured collects launches instead of running them. */
typedef struct EmuNode {
  CUfunction f;
  unsigned grid, block;
  int np;
  unsigned long long *vals;
} EmuNode;
typedef struct EmuGraph {
  int n;
  EmuNode *nodes;
} EmuGraph;
typedef struct EmuStream {
  EmuGraph *capturing;
} EmuStream;

static void emu_run(CUfunction f, unsigned grid, unsigned block, void **params) {
  void (*entry)(void **, unsigned, unsigned);
  *(void **)&entry = f;
  entry(params, grid, block);
}
static CUresult emu_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned sh, void *st, void **params, void **extra) {
  (void)sh, (void)extra;
  /* as the driver: an empty grid or block is CUDA_ERROR_INVALID_VALUE (an empty batch
   * must launch nothing rather than a grid of 0) */
  if (!gx || !gy || !gz || !bx || !by || !bz) return 1;
  EmuGraph *g = st ? ((EmuStream *)st)->capturing : NULL;
  if (!g) {
    emu_run(f, gx, bx, params);
    return 0;
  }
  EmuNode *nodes = realloc(g->nodes, sizeof *nodes * (size_t)(g->n + 1));
  if (!nodes) return 2;
  g->nodes = nodes;
  EmuNode *nd = &nodes[g->n++];
  *nd = (EmuNode){f, gx, bx, 0, NULL};
  while (params[nd->np]) nd->np++;
  if (!(nd->vals = malloc(sizeof *nd->vals * (size_t)(nd->np + 1)))) return 2;
  for (int i = 0; i < nd->np; i++) memcpy(&nd->vals[i], params[i], sizeof *nd->vals);
  return 0;
}
static CUresult emu_stream_create(CUstream *s, unsigned flags) {
  (void)flags;
  return (*s = calloc(1, sizeof(EmuStream))) ? 0 : 2;
}
static CUresult emu_stream_destroy(CUstream s) { free(s); return 0; }
static CUresult emu_begin_capture(CUstream s, int mode) {
  (void)mode;
  EmuStream *es = s;
  if (es->capturing) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  return (es->capturing = calloc(1, sizeof(EmuGraph))) ? 0 : 2;
}
static CUresult emu_end_capture(CUstream s, CUgraph *g) {
  EmuStream *es = s;
  *g = es->capturing;
  es->capturing = NULL;
  return *g ? 0 : 901;
}
static CUresult emu_instantiate(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  (void)flags;
  *e = g;
  return 0;
}
static CUresult emu_graph_launch(CUgraphExec e, CUstream s) {
  (void)s;
  EmuGraph *g = e;
  for (int i = 0; i < g->n; i++) {
    EmuNode *nd = &g->nodes[i];
    void *params[nd->np + 1];
    for (int k = 0; k < nd->np; k++) params[k] = &nd->vals[k];
    params[nd->np] = NULL;
    emu_run(nd->f, nd->grid, nd->block, params);
  }
  return 0;
}
static CUresult emu_exec_destroy(CUgraphExec e) { (void)e; return 0; }
static CUresult emu_graph_destroy(CUgraph g) {
  EmuGraph *eg = g;
  for (int i = 0; i < eg->n; i++) free(eg->nodes[i].vals);
  free(eg->nodes);
  free(eg);
  return 0;
}
static const DrvGraph emu_graph = {emu_stream_create, emu_stream_destroy, emu_begin_capture, emu_end_capture,
                                   emu_instantiate,   emu_graph_launch,   emu_exec_destroy,  emu_graph_destroy};
static CUresult emu_errstr(CUresult r, const char **s) {
  *s = r == 218 ? "no PTX or TDSL_CUDA_EMULATE unset" : r == 200 ? "cannot dlopen the TDSL_CUDA_EMULATE library"
     : r == 500 ? "kernel not found in the emulation library"
     : r == 700 ? "an illegal memory access was encountered (emulated fault)" : "emulation error";
  return 0;
}

static CUresult emu_attribute(CUfunction f, int attr, int v) { (void)f, (void)attr, (void)v; return 0; }
static const Drv emu_drv = {emu_ok0, emu_device, emu_retain, emu_release, emu_set,    emu_load,      emu_unload,
                            emu_function, emu_alloc, emu_free, emu_htod, emu_dtoh, emu_launch, emu_errstr, emu_attribute};

/* ---- driver ---- */

static int load_driver(tdsl_cuda *cu, char *err, size_t n) {
  const char *emu = getenv("TDSL_CUDA_EMULATE");
  const char *graphs = getenv("TDSL_CUDA_GRAPHS"), *trace = getenv("TDSL_CUDA_TRACE");
  cu->graphs = !graphs || strcmp(graphs, "0");
  cu->trace = trace && *trace && strcmp(trace, "0");
  if (emu && *emu) {
    cu->d = emu_drv;
    cu->g = emu_graph;
    const char *fault = getenv("TDSL_CUDA_EMULATE_FAULT");
    cu->fault_at = fault ? strtol(fault, NULL, 10) : 0;
    return 0;
  }
  cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu->lib) return say(err, n, "cuda model: cannot load libcuda.so.1: %s (no NVIDIA driver on this machine?)", dlerror());
  void **slot = (void **)&cu->d;
  for (size_t i = 0; i < sizeof drv_names / sizeof *drv_names; i++) {
    slot[i] = dlsym(cu->lib, drv_names[i]);
    if (!slot[i]) return say(err, n, "cuda model: libcuda.so.1 has no %s (driver too old?)", drv_names[i]);
  }
  slot = (void **)&cu->g;
  for (size_t i = 0; i < sizeof graph_names / sizeof *graph_names; i++)
    if (!(slot[i] = dlsym(cu->lib, graph_names[i]))) cu->graphs = false; /* an old driver: launch by launch */
  if (!cu->g.StreamCreate) memset(&cu->g, 0, sizeof cu->g);
  return 0;
}

static int start(tdsl_cuda *cu, const char *ptx, char *err, size_t n) {
  CUresult r;
  if ((r = cu->d.Init(0))) return say(err, n, "cuda model: cuInit failed: %s", cu_str(cu, r));
  if ((r = cu->d.DeviceGet(&cu->dev, 0))) return say(err, n, "cuda model: no CUDA device: %s", cu_str(cu, r));
  if ((r = cu->d.DevicePrimaryCtxRetain(&cu->ctx, cu->dev)))
    return say(err, n, "cuda model: cannot create a context: %s", cu_str(cu, r));
  cu->have_ctx = true;
  if ((r = cu->d.CtxSetCurrent(cu->ctx))) return say(err, n, "cuda model: cuCtxSetCurrent failed: %s", cu_str(cu, r));
  char log[4096] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  if ((r = cu->d.ModuleLoadDataEx(&cu->mod, ptx, 2, opts, vals)))
    return say(err, n, "cuda model: cannot load the PTX: %s%s%s", cu_str(cu, r), *log ? ": " : "", log);
  /* A stream of its own (graphs cannot capture the default stream); it synchronizes
   * with the default stream, where the copies go. */
  if (cu->g.StreamCreate && cu->g.StreamCreate(&cu->stream, 0)) {
    cu->stream = NULL;
    cu->graphs = false;
  }
  return 0;
}

/* ---- the kernel table (tdsl_cuda_meta) ---- */

/* More than any model has: bounds what a kernel table can make the runtime allocate. */
enum { MAX_DIMS = 1 << 20 };

/* "tdims K N DIM...": kernel K (the last one read, nk kernels so far) has its thread
 * count times the values of these dims; each also is one of its 'd' arguments. */
static int parse_tdims(tdsl_cuda *cu, int nk, int k, int nd, const char *q) {
  if (k != nk - 1 || nd < 1 || nd > 64 || cu->kernels[k].tdims) return -1;
  CKernel *kn = &cu->kernels[k];
  if (!(kn->tdims = calloc((size_t)nd, sizeof(int)))) return -1;
  kn->ntdims = nd;
  for (int i = 0; i < nd; i++) {
    int len = 0;
    if (sscanf(q, " %d%n", &kn->tdims[i], &len) != 1) return -1;
    q += len;
    bool arg = false;
    for (int j = 0; j < kn->nargs; j++) arg |= kn->args[j].kind == 'd' && kn->args[j].index == kn->tdims[i];
    if (!arg) return -1;
  }
  return 0;
}

/* "smem K BYTES": kernel K (the last one read) uses that much dynamic shared memory;
 * beyond the default 48 KB the function must be allowed it first. */
static int parse_smem(tdsl_cuda *cu, int nk, int k, int bytes, char *err, size_t n) {
  if (k != nk - 1 || bytes <= 0 || bytes > (1 << 30) || cu->kernels[k].smem) return say(err, n, "cuda model: bad kernel table");
  cu->kernels[k].smem = bytes;
  enum { MAX_DYNAMIC_SHARED_SIZE_BYTES = 8, DEFAULT_SHARED = 48 * 1024 };
  CUresult r = bytes > DEFAULT_SHARED ? cu->d.FuncSetAttribute(cu->kernels[k].fn, MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes) : 0;
  if (r) return say(err, n, "cuda model: kernel %d cannot have %d bytes of shared memory: %s", k, bytes, cu_str(cu, r));
  return 0;
}

/* "tceil K NUM DIV N DIM...": kernel K (the last one read) has its thread count also
 * times ceil(NUM * DIM... / DIV); each DIM is one of its 'd' arguments. */
static int parse_tceil(tdsl_cuda *cu, int nk, int k, const char *q) {
  if (k != nk - 1) return -1;
  CKernel *kn = &cu->kernels[k];
  CCeil x = {0};
  int len = 0;
  if (sscanf(q, " %ld %ld %d%n", &x.num, &x.div, &x.n, &len) != 3 || x.num < 1 || x.div < 1 || x.n < 1 || x.n > 64 ||
      kn->nceils >= 8)
    return -1;
  q += len;
  if (!(x.dims = calloc((size_t)x.n, sizeof(int)))) return -1;
  CCeil *c = realloc(kn->ceils, sizeof *c * (size_t)(kn->nceils + 1));
  if (!c) {
    free(x.dims);
    return -1;
  }
  kn->ceils = c;
  kn->ceils[kn->nceils++] = x;
  for (int i = 0; i < x.n; i++) {
    if (sscanf(q, " %d%n", &x.dims[i], &len) != 1) return -1;
    q += len;
    bool arg = false;
    for (int j = 0; j < kn->nargs; j++) arg |= kn->args[j].kind == 'd' && kn->args[j].index == x.dims[i];
    if (!arg) return -1;
  }
  return 0;
}

static int parse_table(tdsl_cuda *cu, const char *text, tdsl_resolver res, void *h, char *err, size_t n) {
  if (strncmp(text, "tdslcuda 1\n", 11)) return say(err, n, "cuda model: bad kernel table");
  for (const char *p = text; (p = strchr(p, '\n')); p++) {
    cu->nbufs += !strncmp(p + 1, "buf ", 4) || !strncmp(p + 1, "dbuf ", 5);
    cu->nkernels += !strncmp(p + 1, "kernel ", 7);
  }
  cu->bufs = calloc((size_t)cu->nbufs + 1, sizeof *cu->bufs);
  cu->kernels = calloc((size_t)cu->nkernels + 1, sizeof *cu->kernels);
  if (!cu->bufs || !cu->kernels) return say(err, n, "out of memory");
  char sym[64], name[64];
  int nb = 0, nk = 0, v32;
  for (const char *p = text; (p = strchr(p, '\n')); ) {
    p++;
    int id, used = 0;
    long v;
    if (sscanf(p, "scratch %ld", &v) == 1 && !cu->scratch) {
      CUresult r = cu->d.MemAlloc(&cu->scratch, (size_t)v);
      if (r) return say(err, n, "cuda model: cannot allocate %ld bytes of device memory: %s", v, cu_str(cu, r));
    } else if (sscanf(p, "buf %d %ld", &id, &v) == 2 && nb < cu->nbufs) {
      CBuf *b = &cu->bufs[nb++];
      b->bytes = (size_t)v;
      b->state = HOST_NEWER;
      snprintf(sym, sizeof sym, "tdsl_buf_%d", id);
      if (!(b->host = res(h, sym))) return say(err, n, "cuda model: no symbol %s", sym);
    } else if (sscanf(p, "dbuf %d", &id) == 1 && nb < cu->nbufs) {
      cu->bufs[nb++].dyn = true; /* no storage until its dims are set (tdsl_cuda_resize) */
    } else if (sscanf(p, "tdims %d %d%n", &id, &v32, &used) == 2) {
      if (parse_tdims(cu, nk, id, v32, p + used)) return say(err, n, "cuda model: bad kernel table");
    } else if (sscanf(p, "smem %d %d", &id, &v32) == 2) {
      if (parse_smem(cu, nk, id, v32, err, n)) return -1;
    } else if (sscanf(p, "tceil %d%n", &id, &used) == 1) {
      if (parse_tceil(cu, nk, id, p + used)) return say(err, n, "cuda model: bad kernel table");
    } else if (sscanf(p, "kernel %d %63s %ld %d%n", &id, name, &v, &id, &used) == 4 && nk < cu->nkernels) {
      CKernel *k = &cu->kernels[nk++];
      k->threads = v;
      k->nargs = id;
      k->args = calloc((size_t)k->nargs + 1, sizeof *k->args);
      if (!k->args) return say(err, n, "out of memory");
      const char *q = p + used;
      for (int i = 0; i < k->nargs; i++) {
        int len = 0;
        if (sscanf(q, " %c%d%n", &k->args[i].kind, &k->args[i].index, &len) != 2) return say(err, n, "cuda model: bad kernel table");
        q += len;
        int idx = k->args[i].index;
        if (k->args[i].kind == 's' && idx >= cu->nsyms) cu->nsyms = idx + 1;
        if (k->args[i].kind == 'd' && (idx < 0 || idx >= MAX_DIMS)) return say(err, n, "cuda model: bad kernel table");
        if (k->args[i].kind == 'd' && idx >= cu->ndims) cu->ndims = idx + 1;
        if ((k->args[i].kind == 'b' || k->args[i].kind == 'w') && (idx < 0 || idx >= cu->nbufs))
          return say(err, n, "cuda model: bad kernel table");
      }
      CUresult r = cu->d.ModuleGetFunction(&k->fn, cu->mod, name);
      if (r) return say(err, n, "cuda model: kernel %s: %s", name, cu_str(cu, r));
    }
  }
  cu->syms = calloc((size_t)cu->nsyms + 1, sizeof *cu->syms);
  if (!cu->syms) return say(err, n, "out of memory");
  for (int i = 0; i < cu->nsyms; i++) {
    snprintf(sym, sizeof sym, "tdsl_sym_%d", i);
    if (!(cu->syms[i] = res(h, sym))) return say(err, n, "cuda model: no symbol %s", sym);
  }
  if (!(cu->dims = calloc((size_t)cu->ndims + 1, sizeof *cu->dims))) return say(err, n, "out of memory");
  for (int i = 0; i < cu->ndims; i++) {
    snprintf(sym, sizeof sym, "tdsl_dim_%d", i);
    if (!(cu->dims[i] = res(h, sym))) return say(err, n, "cuda model: no symbol %s", sym);
  }
  for (int i = 0; i < cu->nbufs; i++) {
    if (cu->bufs[i].dyn) continue;
    CUresult r = cu->d.MemAlloc(&cu->bufs[i].dev, cu->bufs[i].bytes ? cu->bufs[i].bytes : 4);
    if (r) return say(err, n, "cuda model: cannot allocate %zu bytes of device memory: %s", cu->bufs[i].bytes, cu_str(cu, r));
  }
  return 0;
}

/* ---- launches and copies ---- */

static void launch_error(tdsl_cuda *cu, const char *what, CUresult r) {
  if (!cu->err[0]) snprintf(cu->err, sizeof cu->err, "cuda model: %s: %s", what, cu_str(cu, r));
}

/* After an error, what every later use of the model reports. */
static int sticky(tdsl_cuda *cu, char *err, size_t n) {
  return say(err, n, "%s (the model is unusable after this error: close and reopen it)", cu->err);
}

static int to_device(tdsl_cuda *cu, CBuf *b) {
  if (b->state != HOST_NEWER || !b->bytes) return 0;
  CUresult r = b->dev ? 0 : cu->d.MemAlloc(&b->dev, b->bytes); /* tdsl_cuda_resize could not */
  if (r) {
    launch_error(cu, "device memory for a tensor", r);
    return -1;
  }
  r = cu->d.MemcpyHtoD(b->dev, b->host, b->bytes);
  if (r) {
    launch_error(cu, "copy to the device", r);
    return -1;
  }
  b->state = SYNCED;
  return 0;
}

/* A grid of at most 2^31 - 1 blocks of 256 threads (cuLaunchKernel's limit). */
#define MAX_THREADS (2147483647L * 256)

/* tdsl_cuda_launch of a model: kernel k with its buffers and the current symbols. Each
 * argument is an 8-byte slot (an int symbol in its low bytes) and the list ends with
 * NULL, so a capture can copy the arguments without knowing the kernel. */
static void launch(void *ctx, int k) {
  tdsl_cuda *cu = ctx;
  if (cu->err[0] || k < 0 || k >= cu->nkernels) return; /* after an error, the routine stops */
  CKernel *kn = &cu->kernels[k];
  cu->d.CtxSetCurrent(cu->ctx);
  CUdeviceptr vals[kn->nargs + 1];
  void *params[kn->nargs + 1];
  for (int i = 0; i < kn->nargs; i++) {
    CArg *a = &kn->args[i];
    params[i] = &vals[i];
    vals[i] = 0;
    if (a->kind == 's' || a->kind == 'd') {
      memcpy(&vals[i], a->kind == 's' ? cu->syms[a->index] : cu->dims[a->index], sizeof(int));
      continue;
    }
    if (a->kind == 'x') {
      vals[i] = cu->scratch;
      continue;
    }
    if (to_device(cu, &cu->bufs[a->index])) return;
    vals[i] = cu->bufs[a->index].dev;
    if (cu->cur && cu->cur->uses[a->index] != 'w') cu->cur->uses[a->index] = a->kind;
  }
  params[kn->nargs] = NULL;
  long threads = kn->threads > 0 ? kn->threads : 1;
  for (int i = 0; i < kn->ntdims; i++) {
    long d = *cu->dims[kn->tdims[i]];
    if (!d) return; /* a dimension set to 0: no threads, nothing to launch (a grid of 0 is invalid) */
    if (d < 0 || threads > MAX_THREADS / d) {
      launch_error(cu, "kernel launch", 1); /* CUDA_ERROR_INVALID_VALUE */
      return;
    }
    threads *= d;
  }
  for (int i = 0; i < kn->nceils; i++) {
    const CCeil *c = &kn->ceils[i];
    long v = c->num;
    for (int j = 0; j < c->n && v; j++) {
      long d = *cu->dims[c->dims[j]];
      if (d < 0 || (d && v > MAX_THREADS / d)) {
        launch_error(cu, "kernel launch", 1); /* CUDA_ERROR_INVALID_VALUE */
        return;
      }
      v *= d;
    }
    v = (v + c->div - 1) / c->div;
    if (!v) return; /* no tiles: nothing to launch */
    if (threads > MAX_THREADS / v) {
      launch_error(cu, "kernel launch", 1);
      return;
    }
    threads *= v;
  }
  unsigned block = threads < 256 ? (unsigned)threads : 256;
  unsigned grid = (unsigned)((threads + block - 1) / block);
  CUresult r = cu->fault_at && ++cu->launches == cu->fault_at
                   ? 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */
                   : cu->d.LaunchKernel(kn->fn, grid, 1, 1, block, 1, 1, (unsigned)kn->smem, cu->stream, params, NULL);
  if (r) {
    launch_error(cu, "kernel launch", r);
    return;
  }
  for (int i = 0; i < kn->nargs; i++)
    if (kn->args[i].kind == 'w') cu->bufs[kn->args[i].index].state = DEVICE_NEWER;
}

/* ---- routines as graphs ---- */

static CRoutine *routine(tdsl_cuda *cu, int r) {
  if (r < 0) return NULL;
  if (r >= cu->nroutines) {
    CRoutine *rs = realloc(cu->routines, sizeof *rs * (size_t)(r + 1));
    if (!rs) return NULL;
    memset(rs + cu->nroutines, 0, sizeof *rs * (size_t)(r + 1 - cu->nroutines));
    cu->routines = rs;
    cu->nroutines = r + 1;
  }
  CRoutine *R = &cu->routines[r];
  if (!R->uses) {
    R->uses = calloc((size_t)cu->nbufs + 1, 1);
    R->syms = calloc((size_t)(cu->nsyms + cu->ndims) + 1, sizeof(int));
    if (!R->uses || !R->syms) return NULL;
  }
  return R;
}

static void drop_graph(tdsl_cuda *cu, CRoutine *R) {
  if (R->exec) cu->g.GraphExecDestroy(R->exec);
  if (R->graph) cu->g.GraphDestroy(R->graph);
  R->exec = NULL;
  R->graph = NULL;
}

static bool same_syms(const tdsl_cuda *cu, const CRoutine *R) {
  for (int i = 0; i < cu->nsyms; i++)
    if (*cu->syms[i] != R->syms[i]) return false;
  for (int i = 0; i < cu->ndims; i++)
    if (*cu->dims[i] != R->syms[cu->nsyms + i]) return false;
  return true;
}

/* The buffers the routine uses, on the device (a graph cannot copy from the host). */
static int upload(tdsl_cuda *cu, const CRoutine *R) {
  for (int b = 0; b < cu->nbufs; b++)
    if (R->uses[b] && to_device(cu, &cu->bufs[b])) return -1;
  return 0;
}

static void trace(const tdsl_cuda *cu, int r, const char *what) {
  if (cu->trace) fprintf(stderr, "tdsl cuda: routine %d: %s\n", r, what);
}

int tdsl_cuda_call_begin(tdsl_cuda *cu, int r) {
  CRoutine *R = cu->err[0] ? NULL : routine(cu, r);
  cu->cur = R;
  if (!R || !cu->graphs || R->no_graph || !R->calls) return 0;
  cu->d.CtxSetCurrent(cu->ctx);
  if (upload(cu, R)) return 1;
  if (R->exec && same_syms(cu, R)) {
    CUresult e = cu->g.GraphLaunch(R->exec, cu->stream);
    if (e) launch_error(cu, "graph launch", e);
    for (int b = 0; b < cu->nbufs; b++)
      if (R->uses[b] == 'w') cu->bufs[b].state = DEVICE_NEWER;
    trace(cu, r, "graph replayed");
    cu->cur = NULL;
    return 1;
  }
  drop_graph(cu, R);
  if (++R->captures > MAX_CAPTURES || cu->g.StreamBeginCapture(cu->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) {
    R->no_graph = true;
    return 0;
  }
  cu->capturing = R;
  return 0;
}

void tdsl_cuda_call_end(tdsl_cuda *cu, int r) {
  CRoutine *R = cu->cur;
  cu->cur = NULL;
  if (!R) return;
  R->calls++;
  if (cu->capturing != R) return;
  cu->capturing = NULL;
  CUgraph g = NULL;
  CUresult e = cu->g.StreamEndCapture(cu->stream, &g);
  R->graph = g;
  if (e || !g || cu->err[0] || cu->g.GraphInstantiate(&R->exec, g, 0)) {
    /* The launches did not run: say so rather than leave stale results. */
    if (!cu->err[0]) launch_error(cu, "graph capture", e ? e : 999);
    R->exec = NULL;
    drop_graph(cu, R);
    R->no_graph = true;
    return;
  }
  for (int i = 0; i < cu->nsyms; i++) R->syms[i] = *cu->syms[i];
  for (int i = 0; i < cu->ndims; i++) R->syms[cu->nsyms + i] = *cu->dims[i];
  e = cu->g.GraphLaunch(R->exec, cu->stream);
  if (e) launch_error(cu, "graph launch", e);
  trace(cu, r, "graph captured and launched");
}

int tdsl_cuda_host_access(tdsl_cuda *cu, int bi, int mode, char *err, size_t n) {
  if (cu->err[0]) return sticky(cu, err, n);
  if (bi < 0 || bi >= cu->nbufs) return 0;
  CBuf *b = &cu->bufs[bi];
  if (b->state == DEVICE_NEWER && mode != TDSL_CUDA_OVERWRITE && b->bytes) {
    cu->d.CtxSetCurrent(cu->ctx);
    CUresult r = cu->d.MemcpyDtoH(b->host, b->dev, b->bytes);
    if (r) { /* a kernel's asynchronous fault surfaces here */
      launch_error(cu, "copy from the device", r);
      return sticky(cu, err, n);
    }
    b->state = SYNCED;
  }
  if (mode != TDSL_CUDA_READ) b->state = HOST_NEWER;
  return 0;
}

int tdsl_cuda_error(tdsl_cuda *cu, char *err, size_t n) { return cu->err[0] ? sticky(cu, err, n) : 0; }

int tdsl_cuda_resize(tdsl_cuda *cu, int bi, void *host, size_t bytes, char *err, size_t n) {
  if (cu->err[0]) return sticky(cu, err, n);
  if (bi < 0 || bi >= cu->nbufs || !cu->bufs[bi].dyn) return 0;
  CBuf *b = &cu->bufs[bi];
  cu->d.CtxSetCurrent(cu->ctx);
  /* Graphs hold the old device pointer: the routines that use b capture again. */
  for (int r = 0; r < cu->nroutines; r++)
    if (cu->routines[r].uses && cu->routines[r].uses[bi]) drop_graph(cu, &cu->routines[r]);
  if (b->dev) cu->d.MemFree(b->dev);
  *b = (CBuf){.host = host, .bytes = bytes, .state = HOST_NEWER, .dyn = true};
  CUresult r = bytes ? cu->d.MemAlloc(&b->dev, bytes) : 0;
  if (r) return say(err, n, "cuda model: cannot allocate %zu bytes of device memory: %s", bytes, cu_str(cu, r));
  return 0;
}

/* ---- open and close ---- */

int tdsl_cuda_is_model(const char *meta) {
  for (const char *p = meta; (p = strstr(p, "\ncuda")); p += 5)
    if (p[5] == '\n' || !p[5]) return 1;
  return 0;
}

tdsl_cuda *tdsl_cuda_open(tdsl_resolver res, void *h, char *err, size_t n) {
  const char *ptx = res(h, "tdsl_cuda_ptx"), *table = res(h, "tdsl_cuda_meta");
  void **ctx_slot = res(h, "tdsl_cuda_ctx"), **launch_slot = res(h, "tdsl_cuda_launch");
  if (!ptx || !table || !ctx_slot || !launch_slot) {
    say(err, n, "cuda model: missing tdsl_cuda_* symbols");
    return NULL;
  }
  tdsl_cuda *cu = calloc(1, sizeof *cu);
  if (!cu) {
    say(err, n, "out of memory");
    return NULL;
  }
  if (load_driver(cu, err, n) || start(cu, ptx, err, n) || parse_table(cu, table, res, h, err, n)) {
    tdsl_cuda_close(cu);
    return NULL;
  }
  cu->ctx_slot = ctx_slot;
  *ctx_slot = cu;
  void (*fn)(void *, int) = launch;
  memcpy(launch_slot, &fn, sizeof fn);
  return cu;
}

void tdsl_cuda_close(tdsl_cuda *cu) {
  if (!cu) return;
  if (cu->ctx_slot) *cu->ctx_slot = NULL;
  if (cu->have_ctx) cu->d.CtxSetCurrent(cu->ctx);
  for (int i = 0; i < cu->nbufs; i++)
    if (cu->bufs[i].dev) cu->d.MemFree(cu->bufs[i].dev);
  if (cu->scratch) cu->d.MemFree(cu->scratch);
  for (int i = 0; i < cu->nkernels; i++) {
    free(cu->kernels[i].args);
    free(cu->kernels[i].tdims);
    for (int c = 0; c < cu->kernels[i].nceils; c++) free(cu->kernels[i].ceils[c].dims);
    free(cu->kernels[i].ceils);
  }
  for (int i = 0; i < cu->nroutines; i++) {
    drop_graph(cu, &cu->routines[i]);
    free(cu->routines[i].uses);
    free(cu->routines[i].syms);
  }
  free(cu->routines);
  if (cu->stream) cu->g.StreamDestroy(cu->stream);
  if (cu->mod) cu->d.ModuleUnload(cu->mod);
  if (cu->have_ctx) cu->d.DevicePrimaryCtxRelease(cu->dev);
  if (cu->lib) dlclose(cu->lib);
  free(cu->bufs);
  free(cu->kernels);
  free(cu->syms);
  free(cu->dims);
  free(cu);
}
