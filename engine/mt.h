/*
** mt.h: public interface of the mtpe engine.  models/ and app/ include only
** this file (or the headers below, which it includes).  Nothing here
** mentions kernels, CUDA, ncurses or SQLite.
**
**   mt_base.h    status codes and messages, logging, asserts, allocation,
**                arenas (also for db/ and ui/)
**   mt_tensor.h  element types, shapes, tensors, float16, random numbers
**   mt_device.h  devices; the CPU's instruction set, threads, peaks and
**                kernel benchmarks
**   mt_params.h  parameters (a model's named tensors) and initialisers
**   mt_graph.h   graphs (one batch's tape): parameters, forward, backward,
**                GEMM type and auto-tuner, node values, leaves
**   mt_ops.h     op builders
**   mt_optim.h   the optimizer (Adam)
**   mt_io.h      model files (.npz, .bin), YAML configs, intgemm items
**   mt_search.h  beam search over abstract scorers
**
** Lifetimes:  mt_device (process) > mt_params (model) > mt_graph (batch).
** Threading:  one mt_graph per thread; an mt_params may be shared read-only
**             by several graphs (inference).  mt_errmsg() is per thread.
** Shapes:     outermost first, last dimension contiguous (row-major).
** Weights:    stored as Marian stores them, [in, out], y = x.W + b.
*/
#ifndef MT_H
#define MT_H

#include "mt_base.h"
#include "mt_device.h"
#include "mt_graph.h"
#include "mt_io.h"
#include "mt_ops.h"
#include "mt_optim.h"
#include "mt_params.h"
#include "mt_search.h"
#include "mt_tensor.h"

#endif /* MT_H */
