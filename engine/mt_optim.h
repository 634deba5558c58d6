/*
** mt_optim.h: the optimizer (Adam / AdamW with clipping, learning-rate
** schedule and exponential smoothing).  Part of the engine's public API
** (mt.h includes it).
*/
#ifndef MT_OPTIM_H
#define MT_OPTIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ optimizer */

typedef enum mt_lr_schedule_kind { MT_LR_CONSTANT = 0, MT_LR_INV_SQRT } mt_lr_schedule_kind;

typedef struct mt_adam_params {
    float lr;               /* base learning rate                               */
    float beta1, beta2;     /* Marian defaults 0.9, 0.98                        */
    float eps;              /* Marian default 1e-9                              */
    float weight_decay;     /* decoupled (AdamW), 0 = off                       */
    float clip_norm;        /* global gradient L2 norm clip, 0 = off            */
    int64_t warmup;         /* linear warm-up over this many updates, 0 = off  */
    int64_t decay_inv_sqrt; /* after this many updates lr *= sqrt(n/t), 0=off */
    float smoothing;        /* exponential smoothing factor, 0 = off (Marian's
                               --exponential-smoothing default 1e-4)           */
} mt_adam_params;
mt_adam_params mt_adam_default_params(void); /* Marian's defaults */

typedef struct mt_adam mt_adam;
mt_status mt_adam_init(mt_params *p, mt_adam_params ap, mt_adam **out);
void mt_adam_free(mt_adam *a);
/* One update from the accumulated gradients (then zeroes them).  Applies
** clipping, the LR schedule, decoupled weight decay and smoothing. */
mt_status mt_adam_step(mt_adam *a);
float mt_adam_lr(const mt_adam *a); /* learning rate of the next step */
int64_t mt_adam_steps(const mt_adam *a);
float mt_adam_last_grad_norm(const mt_adam *a);
/* Moments and smoothed weights, for checkpoints (Marian's
** model.npz.optimizer.npz holds adam_mt, adam_vt; names per parameter). */
mt_tensor *mt_adam_moment(mt_adam *a, int which /*0 m, 1 v*/, int i);
mt_tensor *mt_adam_smoothed(mt_adam *a, int i); /* NULL if smoothing off */
void mt_adam_set_steps(mt_adam *a, int64_t t);
/* Swaps live and smoothed weights (for validation/saving with the average). */
void mt_adam_swap_smoothed(mt_adam *a);

#ifdef __cplusplus
}
#endif
#endif /* MT_OPTIM_H */
