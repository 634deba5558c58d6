/*
** mt_params.h: parameters, the named persistent tensors of a model, and
** their initialisers.  Part of the engine's public API (mt.h includes
** it).
*/
#ifndef MT_PARAMS_H
#define MT_PARAMS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ parameters */

/* Named persistent tensors (the model lifetime), each with a gradient
** buffer (allocated when training) and flags.  Names are Marian's
** ("encoder_l1_self_Wq", "Wemb", ...).  Iteration order = creation order. */
typedef struct mt_params mt_params;

typedef enum mt_init_kind {
    MT_INIT_ZEROS = 0,
    MT_INIT_ONES,
    MT_INIT_GLOROT_UNIFORM, /* U(-a, a), a = sqrt(6 / (fan_in + fan_out))   */
    MT_INIT_GLOROT_NORMAL,  /* N(0, 2 / (fan_in + fan_out))                 */
    MT_INIT_UNIFORM,        /* U(lo, hi)                                      */
    MT_INIT_NORMAL,         /* N(mean, std^2)                                 */
    MT_INIT_VALUES,         /* copy n_values floats from values              */
} mt_init_kind;

typedef struct mt_init {
    mt_init_kind kind;
    float a, b; /* UNIFORM: lo, hi;  NORMAL: mean, std                      */
    const float *values;
    int64_t n_values;
} mt_init;
mt_init mt_init_zeros(void);
mt_init mt_init_ones(void);
mt_init mt_init_glorot_uniform(void);
mt_init mt_init_glorot_normal(void);
mt_init mt_init_uniform(float lo, float hi);
mt_init mt_init_normal(float mean, float std);
mt_init mt_init_values(const float *values, int64_t n);

mt_status mt_params_init(mt_device *dev, uint64_t seed, mt_params **out);
void mt_params_free(mt_params *p);
/* Get-or-create: returns the existing parameter (shape must match, else
** MT_ERR_INVALID with a message naming both shapes) or creates it with init.
** The returned pointer stays valid for the lifetime of p. */
mt_status mt_params_get(mt_params *p, const char *name, mt_dtype dtype, mt_shape shape,
                        mt_init init, mt_tensor **out);
mt_tensor *mt_params_find(const mt_params *p, const char *name); /* NULL if absent */
/* Adds an existing tensor under name, taking ownership of its data (the
** tensor is moved: t->owns becomes false).  Used by model loading. */
mt_status mt_params_adopt(mt_params *p, const char *name, mt_tensor *t);
int mt_params_count(const mt_params *p);
const char *mt_params_name(const mt_params *p, int i);
mt_tensor *mt_params_at(mt_params *p, int i);
mt_tensor *mt_params_grad_at(mt_params *p, int i); /* NULL until grads allocated */
/* Freezes a parameter: no gradient, treated as a constant (memoizable). */
void mt_params_set_trainable(mt_params *p, const char *name, bool trainable);
bool mt_params_trainable_at(const mt_params *p, int i);
/* Allocates zeroed gradient buffers for trainable f32 parameters. */
mt_status mt_params_alloc_grads(mt_params *p);
void mt_params_zero_grads(mt_params *p);
/* Bumped on every change of values (optimizer step, load, set): memoized
** constant nodes computed from older values are recomputed. */
uint64_t mt_params_version(const mt_params *p);
void mt_params_touch(mt_params *p);
int64_t mt_params_numel(const mt_params *p); /* total elements */
/* Quantization multiplier of parameter i (0: not a pre-quantized weight;
** mt_params_adopt_item, mt_io.h). */
float mt_params_qmult_at(const mt_params *p, int i);
/* Bytes (and count, n_packs may be NULL) of the packed weights held for the
** integer GEMM: one per weight matrix and form, shared by all graphs and
** threads that use these parameters. */
size_t mt_params_packed_bytes(mt_params *p, int *n_packs);

#ifdef __cplusplus
}
#endif
#endif /* MT_PARAMS_H */
