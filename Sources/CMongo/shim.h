#ifndef CMONGO_SHIM_H
#define CMONGO_SHIM_H

#include <mongoc/mongoc.h>

/// The bytes of a document; BSON_ITER and bson_get_data are fine, this names the intent.
static inline const uint8_t *cmongo_bson_data(const bson_t *bson) { return bson_get_data(bson); }

/// The length in bytes of a document (a field behind a macro-sized struct).
static inline uint32_t cmongo_bson_len(const bson_t *bson) { return bson->len; }

/// BSON_ITER_HOLDS_DOCUMENT and friends are macros; Swift sees the type through this.
static inline bson_type_t cmongo_iter_type(const bson_iter_t *iter) { return bson_iter_type(iter); }

/// bson_t and bson_iter_t are declared 128-byte aligned, which Swift cannot import: Swift sees
/// them as opaque, so it allocates their storage with these sizes and alignment.
static inline size_t cmongo_bson_size(void) { return sizeof(bson_t); }
static inline size_t cmongo_bson_iter_size(void) { return sizeof(bson_iter_t); }
static inline size_t cmongo_bson_alignment(void) { return BSON_ALIGNOF(bson_t); }

#endif
