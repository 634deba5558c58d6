/*
** mt_device.h: the devices (the CPU, a CUDA GPU) and what the CPU device
** tells and takes: its instruction set, OpenBLAS and its own threads,
** measured peaks and the kernel micro-benchmarks.  Part of the engine's
** public API (mt.h includes it).
*/
#ifndef MT_DEVICE_PUBLIC_H
#define MT_DEVICE_PUBLIC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- device */

/* The CPU device is a process-wide singleton (never freed).  A CUDA device
** exists only when built with MT_CUDA and a GPU is present. */
mt_device *mt_device_cpu(void);
mt_status mt_device_cuda(int ordinal, mt_device **out); /* MT_ERR_UNSUPPORTED without CUDA */
const char *mt_device_name(const mt_device *d);
/* Name of the CPU instruction set in use ("avx512", "avx2", "ref").  The
** environment variable MT_ISA=ref|avx2|avx512 caps it. */
const char *mt_cpu_isa(void);
/* The instruction set the dispatching kernels use now: mt_cpu_isa, or
** below it where a test capped it. */
const char *mt_cpu_isa_active(void);

/* The CPU device's threads and libraries (settings are process-wide).
** OpenBLAS runs its products on mt_cpu_set_blas_threads threads (1: each
** translation worker single-threaded); the device's own threads
** (mt_cpu_set_own_threads; 0 or 1: none) split bfloat16 products and
** row-wise ops.  Training with bfloat16 products gives them all the cores
** and OpenBLAS one. */
void mt_cpu_set_blas_threads(int n);
void mt_cpu_set_own_threads(int n);
/* True when the CPU has AVX-512, OPENBLAS_CORETYPE is unset and the loaded
** OpenBLAS runs a kernel set without AVX-512 (0.3.21 on Zen 4/5): the
** program should setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) and re-execute
** itself, since OpenBLAS picks its kernels before main().  Cheap. */
bool mt_cpu_blas_needs_reexec(void);
const char *mt_cpu_blas_corename(void); /* "SkylakeX", "Haswell", ... */
/* The tile kernel of the bfloat16 products ("avx512-bf16", ...). */
const char *mt_cpu_gemm_bf16_name(void);
/* Where fp32 products take the own small-M kernel instead of OpenBLAS
** (with B transposed or not): at most *max_m rows, and batched products of
** at most *max_batched multiply-adds; both 0 without such a kernel. */
void mt_cpu_gemm_small_limits(bool trans_b, int64_t *max_m, int64_t *max_batched);

/* Measured throughput of one core, for benchmarks (best of short runs over
** `seconds`): fp32 FMA in GFLOP/s with the widest FMA this CPU has (0
** without AVX2), and integer multiply-adds in GOP/s with the instructions
** of the integer GEMM in use (int8 or int16; 0 for the portable one),
** mt_cpu_int_peak_what naming them. */
double mt_cpu_fp32_peak_gflops(double seconds);
double mt_cpu_int_peak_gops(bool int16, double seconds);
const char *mt_cpu_int_peak_what(bool int16);
/* The kernel micro-benchmarks of `mtpe bench`: name "gemm" (fp32 GEMM,
** OpenBLAS against the own small-M kernel), "gemm-int" (int8 / int16
** against fp32), "topk" (fused softmax + top-k) or "attn" (fused
** attention), single-threaded, median of `repeat` samples, tables written
** to out.  peak: the nominal per-core peak the fractions use (gemm: fp32
** GFLOP/s, gemm-int: int8 GOP/s; unused by the others).  MT_ERR_INVALID
** for another name, MT_ERR_NOMEM (message saying of what). */
mt_status mt_cpu_bench(const char *name, int repeat, double peak, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* MT_DEVICE_PUBLIC_H */
