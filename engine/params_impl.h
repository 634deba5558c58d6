/*
** params_impl.h: engine-private access to mt_params for graph.c and optim.c.
*/
#ifndef MT_PARAMS_IMPL_H
#define MT_PARAMS_IMPL_H
#include "mt.h"

/* Device holding the parameters, their gradients and optimizer state. */
mt_device *params_device(const mt_params *p);
/* Get-or-create like mt_params_get, but reports the parameter's index.  With
** any_dtype an existing parameter of another dtype is accepted (mt_param on
** loaded f16/int8 weights); dtype is then only used when creating. */
mt_status params_get_index(mt_params *p, const char *name, mt_dtype dtype, bool any_dtype,
                           mt_shape shape, mt_init init, int *index);
/* Swaps the data of parameter i with t (same dtype, shape and device): used
** by mt_adam_swap_smoothed.  Ownership flags travel with the data. */
void params_swap_data(mt_params *p, int i, mt_tensor *t);
/* Marks parameter i (int8/int16) as a pre-quantized weight with multiplier
** qmult (engine/quantize.c, mt_params_adopt_item). */
void params_set_qmult(mt_params *p, int i, float qmult);

/* A packed form of parameter `index` (integer GEMM panels; key says which
** form) at the parameters' current version, shared by every graph and
** thread: made by fill(ctx, dst) into `bytes` of dev memory on the first
** request (under the parameters' lock), then handed out with a reference
** that the caller gives back with params_pack_unref.  *serial: an id unique
** in the process for this pack.  NULL when out of memory.  Packs of an
** older version are freed once unreferenced. */
const void *params_pack_ref(mt_params *p, int index, uint64_t key, size_t bytes, mt_device *dev,
                            void (*fill)(void *ctx, void *dst), void *ctx, uint64_t *serial);
void params_pack_unref(mt_params *p, const void *data);

#endif /* MT_PARAMS_IMPL_H */
