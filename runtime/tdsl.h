/* tdsl.h: the C runtime for models compiled by tdslc (CLI.md, "The compiled model"). */
#ifndef TDSL_H
#define TDSL_H

#define TDSL_VERSION "0.1.0"

const char *tdsl_version(void);

#endif
