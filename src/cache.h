/* cache.h: the on-disk cache of compiled models (src/cache.c). */
#ifndef TDSL_CACHE_H
#define TDSL_CACHE_H

#include "base.h"

/* The entry path for key_text (everything the output depends on) with extension ext,
 * creating the cache directory; NULL when there is no usable cache directory. */
const char *cache_entry(Arena *a, const char *key_text, const char *ext);

/* An identity of the running compiler (a hash of its executable), for keys: a rebuilt
 * tdslc never reuses another build's entries. NULL if unreadable. */
const char *cache_self_id(Arena *a);

typedef enum CacheResult { CACHE_MISS, CACHE_HIT, CACHE_BAD } CacheResult;
/* CACHE_HIT: out now holds the entry's output (written atomically). CACHE_BAD: the entry
 * failed verification and was removed. */
CacheResult cache_fetch(const char *entry, const char *out);
/* Stores the compiled file out as the entry (atomically). */
bool cache_store(const char *entry, const char *out);

#endif
