/* guard.h: what a stop of the process while code is generated leaves behind.
 *
 * libgccjit cannot report running out of memory as an error: C++ `new` throws
 * std::bad_alloc (terminate, then abort: status 134) and libiberty's xmalloc prints
 * "virtual memory exhausted" and exit(1)s, statuses the contract reads as a crash and as
 * an input error (h-atk: a 2M-number literal under `prlimit --as` of 1.48 GB gave 134,
 * at 1.49 GB status 1). tdslc itself never calls exit or abort while code is generated,
 * so one that happens then is libgccjit's: a message and status 2, a toolchain failure.
 *
 * Whatever stops the process then (that abort or exit, or SIGINT, SIGTERM, SIGHUP), the
 * output temporaries (outfile.h) and libgccjit's own temporary directory go with it:
 * while code is generated $TMPDIR is a scratch directory of tdslc's, removed with all in
 * it on every way out but SIGKILL. */
#ifndef TDSL_GUARD_H
#define TDSL_GUARD_H

/* Once, at start: the exit and signal handlers. */
void guard_install(void);
/* Around code generation (once per process: libiberty reads $TMPDIR once): the scratch
 * $TMPDIR made (left as it was when none can be made) and the handlers armed for this
 * process; guard_end removes the scratch and gives $TMPDIR back. */
void guard_begin(void);
void guard_end(void);
/* After an in-process libgccjit compile: its embedded gcc driver put its own SIGINT,
 * SIGTERM and SIGHUP handlers in place of these (they remove its files, not libgccjit's
 * directory nor the outputs' temporaries); for a model run or checked after it. */
void guard_rearm(void);

#endif
