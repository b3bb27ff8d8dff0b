/* outfile.h: the compiler's output files (.so, .o, --emit-header, --emit-ptx) are
 * written to a temporary file next to their path and renamed over it only when the whole
 * compilation succeeded, so a failure never leaves a truncated output or destroys an
 * older one, and a reader never sees half a library. */
#ifndef TDSL_OUTFILE_H
#define TDSL_OUTFILE_H

#include <stdio.h>

#include "base.h"

typedef struct OutFile {
  const char *path;   /* the final path, as given */
  const char *target; /* what is replaced: path, or the file a symbolic link names */
  char *tmp;          /* the temporary being written (same directory); NULL when none */
  bool direct;        /* path is a device, FIFO or socket: tmp is under $TMPDIR, copied */
  bool holds;         /* fd is a write end of the FIFO path, held until commit/discard */
  bool to_stdout;     /* path is "-": the standard output (direct, copied into fd 1) */
  int fd;
} OutFile;

/* Creates the temporary for path (under $TMPDIR for a device, FIFO or socket, which
 * out_commit writes with the temporary's bytes, never renames over; so for "-", the
 * standard output, as in gcc).
 * A FIFO must have a reader (writing it would block for ever otherwise): one is held open
 * until out_commit/out_discard, so the reader sees no end of file between the writes.
 * False after printing "cannot write" (exit status 2). */
bool out_begin(Arena *a, OutFile *o, const char *path);
/* The temporary opened for writing text (NULL after printing an error). */
FILE *out_fopen(OutFile *o);
/* Renames the temporary over the path (copies it into a device, FIFO or socket); false
 * after printing an error (exit status 2). */
bool out_commit(OutFile *o);
/* Removes the temporary (a failed compilation); harmless when there is none (also on
 * an OutFile that is all zeros). */
void out_discard(OutFile *o);

/* Removes every temporary not yet committed or discarded; async-signal-safe (unlink
 * only), for a handler that ends the process (main.c, libgccjit's abort or exit). */
void out_unlink_all(void);

/* Removes the directory path and everything under it (depth at most 16) with system
 * calls only, no allocation: async-signal-safe, for the scratch directories that a
 * handler ending the process removes (main.c) as well as pcompile's. */
void remove_tree(const char *path);

/* How messages name the output: 'PATH', or "the standard output". */
const char *out_name(Arena *a, const OutFile *o);

/* Whether two paths name the same existing file (same device and inode); "-" (the
 * standard input or output) is no file. */
bool same_file(const char *a, const char *b);

#endif
