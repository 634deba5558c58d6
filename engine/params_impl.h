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

#endif /* MT_PARAMS_IMPL_H */
