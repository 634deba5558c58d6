/*
** test_hooks.h: switches of the engine that only tests turn (white-box
** tests include engine/ headers; models/ and app/ cannot).  Not part of
** the public API, never read from the environment.  Process-wide.
*/
#ifndef MT_TEST_HOOKS_H
#define MT_TEST_HOOKS_H
#include <stdint.h>

#include "mt.h"

/* Pins the auto-tuner (gemm_type MT_GEMM_AUTO) of every GEMM state created
** from now on (a graph's first product) to one mt_gemm_variant for every
** shape, without timing (mt_gemm_decision.pinned; MT_GEMM_SMALL falls back
** to MT_GEMM_BLAS where the small kernel does not take the shape).  -1:
** timed, the default. */
void mt_gemm_pin_for_tests(int variant);

/* The npz writer writes sizes and offsets at or above `limit` as zip64
** fields (0: the default 0xFFFFFFFF), so that a test needs no 4 GB file. */
void mt_npz_set_zip64_limit_for_tests(uint64_t limit);

#endif /* MT_TEST_HOOKS_H */
