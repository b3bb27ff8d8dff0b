/* tdslrt_int.h: what the runtime's own files share and do not export (checkpoint.c,
 * npy.c use the public API of tdsl.h plus these). */
#ifndef TDSLRT_INT_H
#define TDSLRT_INT_H

#include <stdbool.h>

#include "tdsl.h"

#define TDSL_HIDDEN __attribute__((visibility("hidden")))

/* Enters m for a public function (tdslrt.c, "Threads"): -1 for a model that is not an
 * open one (NULL, closed, garbage), or, with the message "FN: NULL WHAT", for a NULL p;
 * else 0, and the caller holds m's lock until tdsl_rt_leave(m). The public functions
 * called meanwhile take the (recursive) lock again. */
TDSL_HIDDEN int tdsl_rt_enter(tdsl_model *m, const char *fn, const char *what, const void *p);
TDSL_HIDDEN void tdsl_rt_leave(tdsl_model *m);
/* Sets tdsl_error(m) (printf-style); returns -1. */
TDSL_HIDDEN int tdsl_rt_fail(tdsl_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A tensor with dynamic dimensions takes them from a shape of rank dims (set with
 * tdsl_set_dim; static dims must match); a static tensor: nothing to do. */
TDSL_HIDDEN int tdsl_rt_take_shape(tdsl_model *m, const char *name, int rank, const long *dims);

/* The tensor a checkpoint entry names: the one of exactly that name (what tdsl_save
 * writes), else tdsl_find_tensor's (an alias, "T.grad"). An alias is a let-binding's
 * name and may equal another tensor's own name (`let%op w = relu ({ w } * x)`): looked
 * up first, it sent the parameter's entry to the relu. Index, or -1. */
TDSL_HIDDEN int tdsl_rt_find_saved(const tdsl_model *m, const char *name);

/* Checkpoint loads: the sizes of dynamic dimensions the saved shapes imply. want
 * (tdsl_rt_want_new: one slot per dimension, -1 while no shape says) gathers them
 * from each entry (tdsl_rt_want_shape; a tensor without dynamic axes, or a shape of
 * another rank, adds nothing: the shape check reports it), refusing two different
 * sizes of one dimension; tdsl_rt_want_apply refuses sizes that contradict dimensions
 * already set, then sets the unset ones (allocating their tensors). where prefixes
 * messages. Each returns -1 with the message (NULL from want_new). An axis 0 of a
 * dimension that unset names (a comma-separated list, "*" for all, NULL for none) was
 * unset when saved: it says nothing; otherwise 0 is the dimension's value. */
TDSL_HIDDEN long *tdsl_rt_want_new(tdsl_model *m);
TDSL_HIDDEN int tdsl_rt_want_shape(tdsl_model *m, long *want, const char *where, const char *name, int rank, const long *dims,
                                   const char *unset);
TDSL_HIDDEN int tdsl_rt_want_apply(tdsl_model *m, const long *want, const char *where);
/* The dimensions' states now (malloc'd; -1 for an unset one; NULL with the message), and
 * putting them back after a refused load that had set some (their tensors reallocated,
 * or freed when a dimension is unset again); the error message is kept. */
TDSL_HIDDEN long *tdsl_rt_dims_now(tdsl_model *m);
TDSL_HIDDEN void tdsl_rt_dims_restore(tdsl_model *m, const long *before);

/* 0 when path may be opened for reading; else -1 with the message: a directory, or a
 * FIFO or socket (opening one blocks until a writer comes, and the readers seek). */
TDSL_HIDDEN int tdsl_rt_readable(tdsl_model *m, const char *path);

/* Whether path starts with the .npy magic (false when unreadable: the raw reader then
 * reports the error). */
TDSL_HIDDEN bool tdsl_rt_is_npy(const char *path);
/* Fills tensor `name` from a .npy file (runtime/npy.c). */
TDSL_HIDDEN int tdsl_rt_load_npy(tdsl_model *m, const char *name, const char *path);

#endif
