/* tdslrt_cuda.h: the runtime's cuda part, used by tdslrt.c only (not installed).
 *
 * A cuda model's host code keeps every tensor in a host mirror (in its instance) and
 * launches kernels through the launch function in the instance header; this part loads libcuda.so.1 with dlopen,
 * loads the PTX, keeps one device buffer per tensor (one over dynamic dimensions is
 * reallocated when they change) and copies lazily: a buffer goes to
 * the device before a kernel that uses it when the host copy is newer, and comes back
 * when the host reads it after a kernel wrote it.
 *
 * TDSL_CUDA_EMULATE=LIB.so replaces the driver with host memory and the kernels of LIB
 * (the model's --emit-cuda source compiled as C with testsuite/cuda/shim.h): the same
 * bookkeeping, checked without a GPU. */
#ifndef TDSLRT_CUDA_H
#define TDSLRT_CUDA_H

#include <stddef.h>

#include "tdsl.h"

typedef struct tdsl_cuda tdsl_cuda;

/* Non-zero when the model's metadata (tdsl_model_meta) has the line "cuda". */
int tdsl_cuda_is_model(const char *meta);
/* Loads the driver and the module, allocates device buffers. res answers tdsl_buf_N,
 * tdsl_sym_N (the instance's storage), tdsl_cuda_ctx / tdsl_cuda_launch (its header
 * slots) and tdsl_cuda_ptx / tdsl_cuda_meta (the model's). NULL with err set. */
tdsl_cuda *tdsl_cuda_open(tdsl_resolver res, void *h, char *err, size_t errlen);
void tdsl_cuda_close(tdsl_cuda *cu);

enum { TDSL_CUDA_READ, TDSL_CUDA_READ_WRITE, TDSL_CUDA_OVERWRITE };
/* Before the host touches buffer b: copies it back if the device copy is newer (not for
 * OVERWRITE) and, unless READ, marks the device copy stale. */
int tdsl_cuda_host_access(tdsl_cuda *cu, int b, int mode, char *err, size_t errlen);
/* Around a call of routine r (its index among the model's functions): begin returns 1
 * when it ran the routine itself (replayed its CUDA graph), 0 when the caller runs it;
 * end always follows. See CRoutine in tdslrt_cuda.c. */
int tdsl_cuda_call_begin(tdsl_cuda *cu, int r);
void tdsl_cuda_call_end(tdsl_cuda *cu, int r);
/* A buffer over dynamic dimensions got new host storage of bytes (the runtime's, for
 * the dims just set; its contents are newer than the device's): the device buffer is
 * reallocated to match, and graphs that used the old one are dropped. -1 with err set
 * when the device memory cannot be had (a launch then tries again). */
int tdsl_cuda_resize(tdsl_cuda *cu, int b, void *host, size_t bytes, char *err, size_t errlen);
/* -1 with the message once a launch or copy has failed (0 if none). Sticky: a failed
 * model stays failed (host_access fails too), since its device state is lost. */
int tdsl_cuda_error(tdsl_cuda *cu, char *err, size_t errlen);

#endif
