/* tdsl.h: the C runtime for models compiled by tdslc (tdslc(1)).
 *
 *   char err[256];
 *   tdsl_model *m = tdsl_open("model.so", err, sizeof err);
 *   if (!m) { fprintf(stderr, "%s\n", err); return 1; }
 *   tdsl_init(m, 0);                                  // every tensor: its init, else 0
 *   tdsl_write(m, "x", xs, 3);                        // host inputs (float32)
 *   if (tdsl_call(m, "y.forward")) puts(tdsl_error(m));
 *   tdsl_read(m, "y", ys, 2);
 *   tdsl_close(m);
 *
 * Every function that can fail returns 0 on success and -1 on error, with the message
 * in tdsl_error(m); nothing aborts. Arguments are checked: a NULL (or closed) model
 * gives -1 (the counts -1, the name getters NULL; tdsl_error(NULL) says so), a NULL
 * name, data or result pointer or a negative count -1 with the message. Tensors are found by alias (a name's last binding) or name, or "T.grad";
 * routines by name, or "T.forward" / "T.backprop". Data is laid out row-major in the
 * memory order batch, output, input. The runtime never includes compiler headers.
 *
 * Threads. Every function may be called from any thread, on one model as well as on
 * several. Each call on a model holds that model's lock for its whole duration, so calls
 * on one model run one at a time (a tdsl_call, tdsl_save or tdsl_load is one step the
 * others see before or after, never half done); calls on different models (also two
 * tdsl_opens of one file) run in parallel. What the runtime keeps is safe from races:
 * dimensions and allocations, holds, index symbols, the thread pool, a cuda model's
 * device copies, error messages. What it hands out is not guarded: tdsl_tensor_info.data
 * read or written while another thread calls the model is the host's race, and a data
 * pointer is valid only until the tensor is reallocated (tdsl_set_dim; use tdsl_hold) or
 * the model closed; a cuda model's until the next tdsl_call. A host that runs routines
 * itself on tdsl_instance(m) (--emit-header) orders them with its other calls on m;
 * their parallel loops take m's lock, so the pool is never replaced under one.
 * tdsl_error(m) gives the
 * calling thread's last message for m (other threads' failures do not change it; a
 * thread that has none gets m's last message from any thread), valid until the thread's
 * next call that fails on m, and while it has failed on fewer than 8 other models since
 * (a thread keeps the messages of the last 8 models it failed on: the 9th reuses the
 * storage of the oldest, whose pointer then shows the newer message). tdsl_close while other threads call the model: the calls
 * already inside finish first, later ones fail with "not an open model"; using a model
 * after tdsl_close returned is refused the same way (while no new model took its
 * address). fork(): the runtime waits until no call runs on any open model, so the
 * child's models are whole and usable (a model's thread pool starts anew in the child). */
#ifndef TDSL_H
#define TDSL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TDSL_VERSION "0.1.0"

typedef struct tdsl_model tdsl_model;

typedef enum tdsl_elem { TDSL_F32 = 0, TDSL_F64 = 1 } tdsl_elem;
enum { TDSL_BATCH = 0, TDSL_OUTPUT = 1, TDSL_INPUT = 2 }; /* axis kinds, in memory order */

/* What a tensor is for (tdsl_tensor_info.role). Optimizer state: a %cd-declared tensor
 * that code updates from its own previous value (a momentum, Adam's moments); a host
 * input: a %cd-declared tensor that no code writes. */
typedef enum tdsl_role {
  TDSL_ROLE_INTERMEDIATE = 0, TDSL_ROLE_PARAM = 1, TDSL_ROLE_GRAD = 2,
  TDSL_ROLE_OPTIMIZER = 3, TDSL_ROLE_INPUT = 4, TDSL_ROLE_CONST = 5
} tdsl_role;
/* "intermediate", "param", "grad", "optimizer", "input", "const" ("unknown" otherwise). */
const char *tdsl_role_name(tdsl_role role);

typedef struct tdsl_tensor_info {
  const char *name;          /* "w", "w.grad", "t#12" for an anonymous tensor */
  int rank;
  int nkind[3];              /* axes per kind: [TDSL_BATCH], [TDSL_OUTPUT], [TDSL_INPUT] */
  const int *dims;           /* rank dims in memory order (batch, output, input) */
  const char *const *labels; /* rank labels, NULL where unlabeled */
  tdsl_elem elem;
  long size;                 /* number of elements */
  void *data;                /* float* or double*: the tensor's storage */
  tdsl_role role;
} tdsl_tensor_info;

const char *tdsl_version(void);

/* Opens a compiled model (.so). On failure returns NULL with a message in err. A model
 * opens initialized as by tdsl_init(m, 0) (tdsl_open_resolved too), so a host that sets
 * the parameters or loads a checkpoint need not call it; a data file that cannot be read
 * then leaves its tensor 0 (tdsl_init reports it). */
tdsl_model *tdsl_open(const char *path, char *err, size_t errlen);
/* Opens a model whose symbols come from resolve (used by tdslc --run; any loader). */
typedef void *(*tdsl_resolver)(void *handle, const char *symbol);
tdsl_model *tdsl_open_resolved(tdsl_resolver resolve, void *handle, char *err, size_t errlen);
void tdsl_close(tdsl_model *m);
/* This open model's storage (its instance): what the NAME_fn_N functions of a header
 * from --emit-header take, and what the header's accessors index. Each tdsl_open of a
 * model gets its own; separate models may be used from separate threads at once. NULL
 * for a model that is not open. */
void *tdsl_instance(tdsl_model *m);
const char *tdsl_error(const tdsl_model *m);

int tdsl_num_tensors(const tdsl_model *m);
int tdsl_find_tensor(const tdsl_model *m, const char *name); /* index, or -1 */
int tdsl_tensor(tdsl_model *m, int index, tdsl_tensor_info *out);
int tdsl_tensor_by_name(tdsl_model *m, const char *name, tdsl_tensor_info *out);
/* Copies n elements, converting from/to the tensor's element type; n must equal the
 * tensor's size. */
int tdsl_read(tdsl_model *m, const char *name, float *dst, long n);
int tdsl_write(tdsl_model *m, const char *name, const float *src, long n);
int tdsl_read_f64(tdsl_model *m, const char *name, double *dst, long n);
int tdsl_write_f64(tdsl_model *m, const char *name, const double *src, long n);
/* Fills a tensor from a file: a NumPy .npy array (float32 or float64, C order, whose
 * shape is the tensor's dims in memory order; size-1 axes may differ, also for a tensor
 * with dynamic dimensions, as tdsl_write_shaped), or else raw little-endian float32
 * values, exactly the tensor's size. */
int tdsl_load_file(tdsl_model *m, const char *name, const char *path);

/* Checkpoints in the safetensors format (readable by safetensors.torch.load_file): one
 * entry per tensor, named by the tensor's name, with its dims in memory order and its
 * element type (F32/F64). `which` is a set of roles, (1u << TDSL_ROLE_x) | ...;
 * TDSL_SAVE_ALL saves every tensor. The file is replaced atomically (a temporary file
 * beside it, renamed over it; a symbolic link stays and its target is replaced), keeping
 * the replaced file's permissions; a device or FIFO is written in place. */
enum {
  TDSL_SAVE_PARAMS = 1u << TDSL_ROLE_PARAM,
  TDSL_SAVE_OPTIMIZER = 1u << TDSL_ROLE_OPTIMIZER,
  TDSL_SAVE_TRAINING = (1u << TDSL_ROLE_PARAM) | (1u << TDSL_ROLE_OPTIMIZER),
  TDSL_SAVE_ALL = 0x3f
};
int tdsl_save(tdsl_model *m, const char *path, unsigned which);
/* Loads every tensor of a safetensors file into the model's tensor of the same name
 * (the tensor's own name, as tdsl_save writes it, before an alias); tensors absent
 * from the file keep their values. Dynamic dimensions come from the
 * saved shapes: unset ones are set (allocating their tensors; a saved axis 0 sets 0
 * unless the file's metadata tdsl_unset, which tdsl_save writes, says the dimension was
 * unset); one already set to another size, or two tensors giving one dimension
 * different sizes, is an error.
 * Every entry is checked first (the name exists, same element type, same dims, offsets
 * within the file, no two entries' data overlapping): on the first mismatch nothing is
 * loaded, the dimensions are as they were (one the shapes had set is unset again) and
 * the error names it. */
int tdsl_load(tdsl_model *m, const char *path);

int tdsl_num_routines(const tdsl_model *m);
const char *tdsl_routine_name(const tdsl_model *m, int index);
int tdsl_find_routine(const tdsl_model *m, const char *name); /* index, or -1 */
/* Runs a routine; "init" (unless the model defines a routine of that name, which
 * tdslc refuses to compile) runs tdsl_init again with the seed of the last tdsl_init:
 * it is called by name, not counted by tdsl_num_routines nor found by tdsl_find_routine. */
int tdsl_call(tdsl_model *m, const char *name);

/* Threads for the model's parallel loops (default: the environment variable
 * TDSL_NUM_THREADS, else the number of online cores; 1 to 1024). Every parallel loop
 * writes each cell from one iteration in the serial order, so results do not depend on
 * the count. Changing the count while another thread runs a routine on the model waits
 * for that routine (the pool is replaced between calls, never under one). */
int tdsl_set_num_threads(tdsl_model *m, int n);
int tdsl_get_num_threads(const tdsl_model *m);

int tdsl_num_indices(const tdsl_model *m);
const char *tdsl_index_name(const tdsl_model *m, int index);
/* Sets an index symbol; the value must be within its range (0 <= v < range). */
int tdsl_set_index(tdsl_model *m, const char *name, long value);
int tdsl_get_index(tdsl_model *m, const char *name, long *value);

/* Dynamic dimensions (`let n = dim ()`, `?` in a shape): sizes set at run time. A
 * tensor whose dims include one is allocated when all of its dims are set, and
 * reallocated (and initialized again, as tdsl_init does, with its last seed) when one
 * changes; until then its size is 0 and its data NULL (set to 0: size 0, data valid). tdsl_tensor_info, tdsl_read and
 * tdsl_write follow the current sizes. Calling a routine while a dimension is unset
 * fails, unless nothing uses that dimension (a `let n = dim ()` no tensor has): it is
 * still listed and may be set, but no call needs it. An anonymous `?` is named "?ID". */
int tdsl_num_dims(const tdsl_model *m);
const char *tdsl_dim_name(const tdsl_model *m, int index);
/* Sets a dimension (0 <= value <= INT_MAX); setting the value it has keeps the data.
 * 0 is an empty axis (an empty batch): its tensors have 0 elements and a valid data
 * pointer, reductions over it give the accumulator's neutral element (a sum 0, max
 * -inf), and a call fails while an index symbol ranges over it (no index is in range). */
int tdsl_set_dim(tdsl_model *m, const char *name, long value);
/* The current value (-1: not set; 0 is a value). */
int tdsl_get_dim(tdsl_model *m, const char *name, long *value);
/* Writes a tensor from data of the given shape (rank dims in memory order): static
 * dims must match, dynamic ones are set from it (tdsl_set_dim), then the data is
 * written (tdsl_write). For a tensor with dynamic dimensions the shape may differ by
 * axes of size 1 ((5) or (5, 1, 1) for dims (n, 1), (5, 1) for (n)) when that leaves one
 * way to pair its other axes with the tensor's: (5) for dims (n, m) is refused. A
 * refused shape (a dim out of range, tensors too large for the machine) changes no
 * dimension: the dims it gives are set together or not at all. */
int tdsl_write_shaped(tdsl_model *m, const char *name, const float *src, int rank, const long *dims);
int tdsl_write_shaped_f64(tdsl_model *m, const char *name, const double *src, int rank, const long *dims);

/* Keeps a tensor's storage (tdsl_tensor_info.data) allocated while held, even after a
 * tdsl_set_dim reallocates the tensor (the held block then belongs to no tensor and is
 * freed by the last tdsl_release, or by tdsl_close). For bindings that hand out views
 * of the storage (python/tdsl: numpy arrays): a view never points to freed memory.
 * Holds count; storage that is not dynamic lives as long as the model (no-op). */
int tdsl_hold(tdsl_model *m, const void *data);
int tdsl_release(tdsl_model *m, const void *data);

/* Initializes every tensor: constants, literals, ranges, files, uniform random
 * (threefry4x32, counter-based: reproducible for a seed and independent of the order
 * cells are visited), initializer expressions (normal, kaiming, ... per cell), zero for
 * the rest and for gradients; resets index symbols to 0. */
int tdsl_init(tdsl_model *m, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif
