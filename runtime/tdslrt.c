/* tdslrt.c: runtime entry points (placeholder until the runtime lands). */
#include "tdsl.h"

const char *tdsl_version(void) { return TDSL_VERSION; }
