/*
** mt_tensor.h: element types, shapes and tensors (data on a device), float16
** conversion, the seeded random generator.  Part of the engine's public
** API (mt.h includes it).
*/
#ifndef MT_TENSOR_H
#define MT_TENSOR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_MAX_DIMS 6

/* --------------------------------------------------------------- tensors */

typedef enum mt_dtype {
    MT_F32 = 0,
    MT_F16 = 1, /* storage only: converted to f32 for compute             */
    MT_I8 = 2,
    MT_I16 = 3,
    MT_I32 = 4,
    MT_BF16 = 5, /* storage only: the fused attention's bfloat16 pairs      */
    MT_DTYPE_COUNT
} mt_dtype;

size_t mt_dtype_size(mt_dtype t);
const char *mt_dtype_name(mt_dtype t); /* "float32", "float16", "int8", ... */

typedef struct mt_device mt_device; /* a CPU or CUDA execution target */

typedef struct mt_shape {
    int ndim;
    int64_t dim[MT_MAX_DIMS];
} mt_shape;

mt_shape mt_shape_make(int ndim, const int64_t *dims);
mt_shape mt_shape1(int64_t d0);
mt_shape mt_shape2(int64_t d0, int64_t d1);
mt_shape mt_shape3(int64_t d0, int64_t d1, int64_t d2);
mt_shape mt_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3);
int64_t mt_shape_numel(const mt_shape *s);
bool mt_shape_eq(const mt_shape *a, const mt_shape *b);
/* Writes "[2, 3, 4]" into buf (always NUL-terminated); returns buf. */
char *mt_shape_str(const mt_shape *s, char *buf, size_t n);

/* A tensor: shape, dtype, and data on a device (host memory for the CPU
** device).  A tensor either owns its data (owns=true: allocated with
** mt_tensor_init, freed by mt_tensor_free) or views memory owned elsewhere
** (graph workspace, parameter buffer, a mapped file).  Models do not touch
** data directly; they use mt_tensor_get/set which copy through the device. */
typedef struct mt_tensor {
    mt_shape shape;
    mt_dtype dtype;
    void *data;
    mt_device *dev;
    bool owns;
} mt_tensor;

/* Allocates a zero-filled tensor on dev (NULL = CPU). */
mt_status mt_tensor_init(mt_device *dev, mt_dtype dtype, mt_shape shape, mt_tensor *out);
void mt_tensor_free(mt_tensor *t); /* frees data if owned; safe on zeroed t */
int64_t mt_tensor_numel(const mt_tensor *t);
size_t mt_tensor_bytes(const mt_tensor *t);
/* Host <-> device copies of the whole tensor (bytes must equal the size). */
mt_status mt_tensor_set(mt_tensor *t, const void *host, size_t bytes);
mt_status mt_tensor_get(const mt_tensor *t, void *host, size_t bytes);
/* f16 <-> f32 conversion (IEEE binary16, round to nearest even). */
uint16_t mt_f32_to_f16(float f);
float mt_f16_to_f32(uint16_t h);

/* ------------------------------------------------------- random numbers */

/* Small seeded generator (xoshiro-style), reproducible across platforms. */
typedef struct mt_rng {
    uint64_t s[4];
} mt_rng;
void mt_rng_seed(mt_rng *r, uint64_t seed);
uint64_t mt_rng_next(mt_rng *r);
float mt_rng_uniform(mt_rng *r); /* [0, 1)                               */
float mt_rng_normal(mt_rng *r);  /* standard normal                      */

#ifdef __cplusplus
}
#endif
#endif /* MT_TENSOR_H */
