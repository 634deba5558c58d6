/*
** test_gemm_int.c: the int8 / int16 GEMM (kernels/cpu/gemm_int*.c) against
** an oracle written here: its own quantizer (clamp, round half to even),
** plain [k,n] matrices and int64 dot products reduced modulo 2^32.  Every
** variant this CPU can run (ref, AVX2, AVX-512 VNNI) must return exactly
** the oracle's int32 accumulators on odd shapes, extreme values (+-127,
** -128 in pre-quantized weights, int16 clipping and wrap-around), all-zero
** matrices; the float output must be identical across variants and within
** the error bound derived in kcpu.h of the fp64 product; packing must
** round-trip; the dispatcher must follow kcpu_isa_force().  The emulation
** of intgemm's saturating int8 paths (SAT16) has an oracle of its own.
*/
#include "harness.h"
#include "test_util.h"
#include "kcpu_impl.h"
#include "mt_base.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static void *xalloc(size_t bytes) {
    void *p = mt_try_aligned_alloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_gemm_int: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}

/* The oracle's quantizer, written independently of kcpu_quantize_*. */
static int32_t oq(float x, float mult, float lo, float hi) {
    float v = x * mult;
    v = v > lo ? v : lo; /* NaN -> lo, as documented */
    v = v < hi ? v : hi;
    return (int32_t)rintf(v);
}

static float omult8(const float *x, int64_t rows, int64_t cols, int64_t ld) {
    float mx = 0.0f;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            mx = fabsf(x[i * ld + j]) > mx ? fabsf(x[i * ld + j]) : mx;
        }
    }
    return mx > 0.0f ? 127.0f / mx : 1.0f;
}

static int32_t wrap32(int64_t s) { return (int32_t)(uint32_t)(uint64_t)s; }

static const kcpu_igemm_impl all_impls[] = {KCPU_IGEMM_REF, KCPU_IGEMM_AVX2, KCPU_IGEMM_VNNI};
enum { N_IMPLS = 3 };

/* One problem: A [m,k] (lda), B [k,n] (ldb = n), bias [n]. */
typedef struct problem {
    int64_t m, k, n, lda;
    float *a, *b, *bias;
} problem;

static void problem_alloc(problem *p, int64_t m, int64_t k, int64_t n) {
    p->m = m;
    p->k = k;
    p->n = n;
    p->lda = k + 3;
    p->a = xalloc((size_t)(m * p->lda) * sizeof(float));
    p->b = xalloc((size_t)(k * n) * sizeof(float));
    p->bias = xalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < m * p->lda; i++) {
        p->a[i] = NAN; /* the row padding must never be read */
    }
}

static void problem_free(problem *p) {
    mt_aligned_free(p->a);
    mt_aligned_free(p->b);
    mt_aligned_free(p->bias);
}

/* A in [-2, 2], B in [-0.5, 0.5], bias in [-1, 1] (the epilogue tests). */
static void problem_random(problem *p) {
    for (int64_t i = 0; i < p->m * p->lda; i++)
        p->a[i] = test_urand(-2.0f, 2.0f);
    for (int64_t i = 0; i < p->k * p->n; i++)
        p->b[i] = test_urand(-0.5f, 0.5f);
    for (int64_t j = 0; j < p->n; j++)
        p->bias[j] = test_urand(-1.0f, 1.0f);
}

/* Oracle accumulators for bits 8/16; also returns qa.  Bq from the packed
** buffer's qb (checked separately against the oracle's own multiplier). */
static float oracle_acc(int bits, const problem *p, float qb, int32_t *acc) {
    float lo = bits == 8 ? -127.0f : -32768.0f, hi = bits == 8 ? 127.0f : 32767.0f;
    float qa = bits == 8 ? omult8(p->a, p->m, p->k, p->lda) : 1024.0f;
    for (int64_t i = 0; i < p->m; i++) {
        for (int64_t j = 0; j < p->n; j++) {
            int64_t s = 0;
            for (int64_t k = 0; k < p->k; k++) {
                s += (int64_t)oq(p->a[i * p->lda + k], qa, lo, hi) *
                     oq(p->b[k * p->n + j], qb, lo, hi);
            }
            acc[i * p->n + j] = wrap32(s);
        }
    }
    return qa;
}

static void *pack(int bits, const problem *p) {
    size_t bytes = bits == 8 ? kcpu_pack_i8_bytes(p->k, p->n) : kcpu_pack_i16_bytes(p->k, p->n);
    void *pk = xalloc(bytes); /* exact size: ASan sees any overrun */
    if (bits == 8) {
        kcpu_pack_i8(p->k, p->n, p->b, p->n, pk);
    } else {
        kcpu_pack_i16(p->k, p->n, p->b, p->n, pk);
    }
    return pk;
}

static float run_acc(int bits, kcpu_igemm_impl impl, const problem *p, const void *pk, int32_t *acc,
                     int64_t ldacc) {
    size_t sb = bits == 8 ? kcpu_gemm_i8_scratch_bytes(p->m, p->k)
                          : kcpu_gemm_i16_scratch_bytes(p->m, p->k);
    char *scratch = xalloc(sb + 5);
    float qa = bits == 8 ? kcpu_gemm_i8_acc(impl, p->m, p->a, p->lda, pk, acc, ldacc, scratch + 5)
                         : kcpu_gemm_i16_acc(impl, p->m, p->a, p->lda, pk, acc, ldacc, scratch + 5);
    mt_aligned_free(scratch);
    return qa;
}

static void run_f32(int bits, kcpu_igemm_impl impl, const problem *p, const void *pk,
                    const float *bias, float *c, int64_t ldc) {
    size_t sb = bits == 8 ? kcpu_gemm_i8_scratch_bytes(p->m, p->k)
                          : kcpu_gemm_i16_scratch_bytes(p->m, p->k);
    char *scratch = xalloc(sb + 3);
    if (bits == 8) {
        kcpu_gemm_i8_impl(impl, p->m, p->a, p->lda, pk, bias, c, ldc, scratch + 3);
    } else {
        kcpu_gemm_i16_impl(impl, p->m, p->a, p->lda, pk, bias, c, ldc, scratch + 3);
    }
    mt_aligned_free(scratch);
}

/* Every available variant: accumulators equal to `want` exactly, the
** column padding of acc (ldacc = n + 2) untouched.  Returns 1 if all ok. */
static int check_acc_all(int bits, const problem *p, const void *pk, const int32_t *want,
                         float want_qa, const char *what) {
    int ok = 1;
    int64_t ld = p->n + 2;
    int32_t *acc = xalloc((size_t)(p->m * ld) * sizeof(int32_t));
    for (int v = 0; v < N_IMPLS; v++) {
        kcpu_igemm_impl impl = all_impls[v];
        if (!kcpu_igemm_available(impl)) {
            continue;
        }
        for (int64_t i = 0; i < p->m * ld; i++) {
            acc[i] = 0x5a5a5a5a;
        }
        float qa = run_acc(bits, impl, p, pk, acc, ld);
        int64_t bad = 0, first = -1, pad_bad = 0;
        for (int64_t i = 0; i < p->m; i++) {
            for (int64_t j = 0; j < ld; j++) {
                int32_t got = acc[i * ld + j];
                if (j >= p->n) {
                    pad_bad += got != 0x5a5a5a5a;
                } else if (got != want[i * p->n + j]) {
                    if (first < 0) {
                        first = i * p->n + j;
                    }
                    bad++;
                }
            }
        }
        ok &= CHECK(
            bad == 0,
            "int%d %s %s m=%lld k=%lld n=%lld: %lld accumulators differ, first "
            "[%lld,%lld] got %d want %d",
            bits, kcpu_igemm_name(impl), what, (long long)p->m, (long long)p->k, (long long)p->n,
            (long long)bad, (long long)(first / (first < 0 ? 1 : p->n)), (long long)(first % p->n),
            first < 0 ? 0 : acc[first / p->n * ld + first % p->n], first < 0 ? 0 : want[first]);
        ok &= CHECK(pad_bad == 0, "int%d %s %s: %lld writes beyond n", bits, kcpu_igemm_name(impl),
                    what, (long long)pad_bad);
        ok &= CHECK(qa == want_qa, "int%d %s %s: qa %.9g want %.9g", bits, kcpu_igemm_name(impl),
                    what, qa, want_qa);
    }
    mt_aligned_free(acc);
    return ok;
}

/* Float output of every variant: identical to the reference's (same
** arithmetic), padding of C untouched, and within the kcpu.h bound of the
** fp64 product.  Returns the worst |err| / bound. */
static double check_f32_all(int bits, const problem *p, const void *pk, const char *what) {
    int64_t ldc = p->n + 5;
    size_t cn = (size_t)(p->m * ldc);
    float *c = xalloc(cn * sizeof(float)), *cref = xalloc(cn * sizeof(float));
    double mxa = 0.0, mxb = 0.0;
    for (int64_t i = 0; i < p->m; i++) {
        for (int64_t k = 0; k < p->k; k++) {
            mxa = fmax(mxa, fabs(p->a[i * p->lda + k]));
        }
    }
    for (int64_t i = 0; i < p->k * p->n; i++) {
        mxb = fmax(mxb, fabs(p->b[i]));
    }
    /* quantization error per element (kcpu.h): half a step + float rounding */
    double ea = bits == 8 ? mxa * (1.0 / 254 + ldexp(1, -22)) : ldexp(1, -11);
    double eb = bits == 8 ? mxb * (1.0 / 254 + ldexp(1, -22)) : ldexp(1, -11);
    double worst = 0.0;
    for (int v = 0; v < N_IMPLS; v++) {
        kcpu_igemm_impl impl = all_impls[v];
        if (!kcpu_igemm_available(impl)) {
            continue;
        }
        float *out = impl == KCPU_IGEMM_REF ? cref : c;
        for (size_t i = 0; i < cn; i++) {
            out[i] = -7.0f;
        }
        run_f32(bits, impl, p, pk, p->bias, out, ldc);
        int64_t diff = 0, pad = 0, over = 0, first = -1;
        for (int64_t i = 0; i < p->m; i++) {
            for (int64_t j = 0; j < ldc; j++) {
                float got = out[i * ldc + j];
                if (j >= p->n) {
                    pad += got != -7.0f;
                    continue;
                }
                if (impl != KCPU_IGEMM_REF) {
                    diff += memcmp(&got, &cref[i * ldc + j], sizeof got) != 0;
                }
                double exact = p->bias[j], s1 = 0.0, s2 = 0.0;
                for (int64_t k = 0; k < p->k; k++) {
                    double a = p->a[i * p->lda + k], b = p->b[k * p->n + j];
                    exact += a * b;
                    s1 += fabs(a) * eb + ea * fabs(b) + ea * eb;
                    s2 += (fabs(a) + ea) * (fabs(b) + eb);
                }
                double bound = s1 + ldexp(1, -22) * (s2 + fabs(p->bias[j])) + 1e-30;
                /* the looser whole-matrix form of the same bound */
                double loose =
                    (double)p->k * (mxa * eb + mxb * ea + ea * eb) +
                    ldexp(1, -22) * ((double)p->k * (mxa + ea) * (mxb + eb) + fabs(p->bias[j])) +
                    1e-30;
                double err = fabs((double)got - exact);
                worst = fmax(worst, err / bound);
                bool in = err <= bound && bound <= loose * (1 + 1e-12);
                if (!in) {
                    if (first < 0) {
                        first = i * p->n + j;
                        CHECK(in,
                              "int%d %s %s m=%lld k=%lld n=%lld: C[%lld,%lld] = %.9g, exact "
                              "%.9g, err %.3g > bound %.3g (loose %.3g)",
                              bits, kcpu_igemm_name(impl), what, (long long)p->m, (long long)p->k,
                              (long long)p->n, (long long)i, (long long)j, got, exact, err, bound,
                              loose);
                    }
                    over++;
                }
            }
        }
        CHECK(diff == 0, "int%d %s %s m=%lld k=%lld n=%lld: %lld outputs differ from ref", bits,
              kcpu_igemm_name(impl), what, (long long)p->m, (long long)p->k, (long long)p->n,
              (long long)diff);
        CHECK(pad == 0, "int%d %s %s: %lld writes beyond n in C", bits, kcpu_igemm_name(impl), what,
              (long long)pad);
        CHECK(over == 0, "int%d %s %s: %lld outputs beyond the error bound", bits,
              kcpu_igemm_name(impl), what, (long long)over);
    }
    mt_aligned_free(c);
    mt_aligned_free(cref);
    return worst;
}

/* ---------------------------------------------------------------- tests */

static void test_quantizers(void) {
    /* int8 with mult 1: ties round to even, +-127 clamp, -128 never made */
    const float x8[] = {2.5f,   3.5f,    -2.5f,  -0.5f,   0.5f,    1.5f,     126.5f,
                        127.0f, -127.0f, 200.0f, -200.0f, -128.0f, -127.49f, 0.49999997f};
    const int want8[] = {2, 4, -2, 0, 0, 2, 126, 127, -127, 127, -127, -127, -127, 0};
    int8_t y8[14];
    kcpu_quantize_i8(14, x8, 1.0f, y8);
    for (int i = 0; i < 14; i++) {
        CHECK(y8[i] == want8[i], "quantize_i8(%.8g) = %d want %d", x8[i], y8[i], want8[i]);
    }
    /* int16 with 2^10: half-way cases and the saturation at +-32 */
    const float x16[] = {0.5f / 1024,     1.5f / 1024, 2.5f / 1024, -2.5f / 1024, 1.0f,
                         31.99951171875f, 32.0f,       40.0f,       -32.0f,       -32.0009765625f,
                         -40.0f,          -1e30f,      1e30f};
    const int want16[] = {0,     2,      2,      -2,     1024,   32767, 32767,
                          32767, -32768, -32768, -32768, -32768, 32767};
    int16_t y16[13];
    kcpu_quantize_i16(13, x16, KCPU_I16_MULT, y16);
    for (int i = 0; i < 13; i++) {
        CHECK(y16[i] == want16[i], "quantize_i16(%.9g) = %d want %d", x16[i], y16[i], want16[i]);
    }
    CHECK(kcpu_i8_mult(0.0f) == 1.0f, "mult of max 0 is 1");
    CHECK(kcpu_i8_mult(127.0f) == 1.0f, "mult of 127");
    CHECK(kcpu_i8_mult(2.0f) == 63.5f, "mult of 2");
    CHECK(kcpu_i8_mult(1e-40f) == 1.0f, "mult of a subnormal max (127/max overflows) is 1");
    CHECK(kcpu_igemm_unquant(2.0f, 4.0f) == 0.125f, "unquant");
    CHECK(kcpu_igemm_unquant(1024.0f, 1024.0f) == ldexpf(1.0f, -20), "unquant int16");
    float xs[5] = {0.5f, -3.0f, NAN, 2.0f, -1.0f};
    CHECK(kcpu_maxabs_f32(1, 5, xs, 5) == 3.0f, "maxabs skips NaN");
    float ys[4] = {0.5f, 9.0f, -2.0f, 9.0f}; /* 2 rows of 1, stride 2: 9 is padding */
    CHECK(kcpu_maxabs_f32(2, 1, ys, 2) == 2.0f, "maxabs with a row stride: %g",
          kcpu_maxabs_f32(2, 1, ys, 2));
    /* the library's quantizer agrees with the oracle's on random values */
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        float x = test_urand(-3.0f, 3.0f), q = test_urand(1.0f, 200.0f);
        int8_t a;
        int16_t b;
        kcpu_quantize_i8(1, &x, q, &a);
        kcpu_quantize_i16(1, &x, q * 40.0f, &b);
        bad += a != oq(x, q, -127.0f, 127.0f) || b != oq(x, q * 40.0f, -32768.0f, 32767.0f);
    }
    CHECK(bad == 0, "quantizers vs oracle: %d mismatches", bad);
}

static void test_pack(void) {
    static const int64_t ks[] = {1, 3, 17, 64, 100};
    static const int64_t ns[] = {1, 5, 64, 65, 130};
    for (size_t a = 0; a < 5; a++) {
        for (size_t b = 0; b < 5; b++) {
            int64_t k = ks[a], n = ns[b];
            float *w = xalloc((size_t)(k * n) * sizeof(float));
            for (int64_t i = 0; i < k * n; i++) {
                w[i] = test_urand(-0.7f, 0.5f);
            }
            float qb = omult8(w, k, n, n);
            size_t bytes = kcpu_pack_i8_bytes(k, n);
            int64_t kp = (k + 3) / 4 * 4, np = (n + 63) / 64 * 64;
            CHECK(bytes == (size_t)(64 + 4 * np + kp * np), "pack_i8_bytes(%lld, %lld) = %zu",
                  (long long)k, (long long)n, bytes);
            CHECK(kcpu_pack_i16_bytes(k, n) == (size_t)(64 + ((k + 1) / 2 * 2) * np * 2),
                  "pack_i16_bytes");
            void *pk = xalloc(bytes);
            kcpu_pack_i8(k, n, w, n, pk);
            kcpu_packed_info info;
            CHECK(kcpu_packed_get_info(pk, &info) && info.bits == 8 && info.k == k && info.n == n &&
                      info.kp == kp && info.np == np && info.qb == qb && info.bytes == bytes,
                  "packed info k=%lld n=%lld", (long long)k, (long long)n);
            int8_t *u = xalloc((size_t)(k * n)), *bt = xalloc((size_t)(k * n));
            kcpu_unpack_i8(pk, u);
            int bad = 0;
            for (int64_t i = 0; i < k * n; i++) {
                bad += u[i] != oq(w[i], qb, -127.0f, 127.0f);
            }
            CHECK(bad == 0, "unpack(pack_i8) k=%lld n=%lld: %d differ", (long long)k, (long long)n,
                  bad);
            /* the corrections (layout in kcpu.h: int32 [np] after the 64-byte header) */
            const int32_t *corr = (const int32_t *)((const char *)pk + 64);
            bad = 0;
            for (int64_t j = 0; j < np; j++) {
                uint32_t sum = 0;
                for (int64_t i = 0; j < n && i < k; i++) {
                    sum += (uint32_t)(int32_t)u[i * n + j];
                }
                bad += corr[j] != (int32_t)(sum * (uint32_t)-128);
            }
            CHECK(bad == 0, "pack_i8 corrections k=%lld n=%lld: %d differ", (long long)k,
                  (long long)n, bad);
            /* the transposed float packers give the same bytes as the plain ones */
            float *wt = xalloc(sizeof(float) * (size_t)(k * n));
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = 0; j < n; j++) {
                    wt[j * k + i] = w[i * n + j];
                }
            }
            size_t most = bytes > kcpu_pack_i16_bytes(k, n) ? bytes : kcpu_pack_i16_bytes(k, n);
            void *pt = xalloc(most), *pp = xalloc(most);
            kcpu_pack_i8_ex(k, n, wt, k, true, pt);
            CHECK(memcmp(pt, pk, bytes) == 0, "pack_i8_ex trans = pack_i8, k=%lld n=%lld",
                  (long long)k, (long long)n);
            kcpu_pack_i16_ex(k, n, wt, k, true, pt);
            kcpu_pack_i16(k, n, w, n, pp);
            CHECK(memcmp(pt, pp, kcpu_pack_i16_bytes(k, n)) == 0,
                  "pack_i16_ex trans = pack_i16, k=%lld n=%lld", (long long)k, (long long)n);
            mt_aligned_free(wt), mt_aligned_free(pt), mt_aligned_free(pp);
            /* pre-quantized, transposed ([n,k]) with -128 in it */
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = 0; j < n; j++) {
                    bt[j * k + i] = (i + j) % 7 == 3 ? INT8_MIN : u[i * n + j];
                }
            }
            void *pq = xalloc(bytes);
            int64_t clamped = kcpu_pack_i8_q(k, n, bt, k, true, 3.5f, pq);
            int64_t want_cl = 0;
            int8_t *u2 = xalloc((size_t)(k * n));
            kcpu_unpack_i8(pq, u2);
            bad = 0;
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = 0; j < n; j++) {
                    bool m128 = (i + j) % 7 == 3;
                    want_cl += m128;
                    bad += u2[i * n + j] != (m128 ? -127 : u[i * n + j]);
                }
            }
            CHECK(bad == 0 && clamped == want_cl,
                  "pack_i8_q trans: %d differ, %lld clamped want %lld", bad, (long long)clamped,
                  (long long)want_cl);
            CHECK(kcpu_packed_get_info(pq, &info) && info.qb == 3.5f, "pack_i8_q qb");
            /* int16 round trip, plain and transposed */
            void *p16 = xalloc(kcpu_pack_i16_bytes(k, n)), *q16 = xalloc(kcpu_pack_i16_bytes(k, n));
            kcpu_pack_i16(k, n, w, n, p16);
            int16_t *v16 = xalloc((size_t)(k * n) * 2), *t16 = xalloc((size_t)(k * n) * 2);
            kcpu_unpack_i16(p16, v16);
            bad = 0;
            for (int64_t i = 0; i < k * n; i++) {
                bad += v16[i] != oq(w[i], 1024.0f, -32768.0f, 32767.0f);
            }
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = 0; j < n; j++) {
                    t16[j * k + i] = (int16_t)(v16[i * n + j] ^ 0x5555);
                }
            }
            kcpu_pack_i16_q(k, n, t16, k, true, 1024.0f, q16);
            kcpu_unpack_i16(q16, t16);
            for (int64_t i = 0; i < k * n; i++) {
                bad += t16[i] != (int16_t)(v16[i] ^ 0x5555);
            }
            CHECK(bad == 0, "int16 pack/unpack k=%lld n=%lld: %d differ", (long long)k,
                  (long long)n, bad);
            CHECK(kcpu_packed_get_info(p16, &info) && info.bits == 16 && info.qb == 1024.0f,
                  "int16 info");
            memset(pq, 0, 64);
            CHECK(!kcpu_packed_get_info(pq, &info), "a zeroed header is not a packed matrix");
            mt_aligned_free(w), mt_aligned_free(pk), mt_aligned_free(u), mt_aligned_free(bt);
            mt_aligned_free(pq), mt_aligned_free(u2), mt_aligned_free(p16), mt_aligned_free(q16);
            mt_aligned_free(v16), mt_aligned_free(t16);
        }
    }
}

static void test_shapes(void) {
    static const int64_t ms[] = {1, 2, 3, 7, 16, 33};
    static const int64_t ks[] = {1, 3, 17, 64, 100, 513};
    static const int64_t ns[] = {1, 5, 16, 17, 100, 257};
    double worst8 = 0.0, worst16 = 0.0;
    for (size_t mi = 0; mi < 6; mi++) {
        for (size_t ki = 0; ki < 6; ki++) {
            for (size_t ni = 0; ni < 6; ni++) {
                problem p;
                problem_alloc(&p, ms[mi], ks[ki], ns[ni]);
                float sa = test_urand(0.1f, 8.0f), sb = test_urand(0.01f, 1.0f);
                for (int64_t i = 0; i < p.m; i++) {
                    for (int64_t k = 0; k < p.k; k++) {
                        p.a[i * p.lda + k] = test_urand(-sa, sa);
                    }
                }
                for (int64_t i = 0; i < p.k * p.n; i++) {
                    p.b[i] = test_urand(-sb, sb);
                }
                for (int64_t j = 0; j < p.n; j++) {
                    p.bias[j] = test_urand(-1.0f, 1.0f);
                }
                /* make +-max appear in both signs somewhere (quantize to +-127) */
                p.a[0] = sa;
                p.a[(p.m - 1) * p.lda + p.k - 1] = -sa;
                p.b[p.k * p.n - 1] = -sb;
                int32_t *want = xalloc((size_t)(p.m * p.n) * sizeof(int32_t));
                for (int bits = 8; bits <= 16; bits += 8) {
                    void *pk = pack(bits, &p);
                    kcpu_packed_info info;
                    CHECK(kcpu_packed_get_info(pk, &info), "info");
                    if (bits == 8) {
                        CHECK(info.qb == omult8(p.b, p.k, p.n, p.n), "qb %.9g", info.qb);
                    }
                    float qa = oracle_acc(bits, &p, info.qb, want);
                    check_acc_all(bits, &p, pk, want, qa, "random");
                    double w = check_f32_all(bits, &p, pk, "random");
                    if (bits == 8) {
                        worst8 = fmax(worst8, w);
                    } else {
                        worst16 = fmax(worst16, w);
                    }
                    mt_aligned_free(pk);
                }
                mt_aligned_free(want);
                problem_free(&p);
            }
        }
    }
    fprintf(stderr, "worst |err| / bound: int8 %.3f, int16 %.3f\n", worst8, worst16);
    /* the bound must not be vacuous: quantization error is visible in it */
    CHECK(worst8 > 0.01 && worst8 <= 1.0, "int8 err/bound %.3g", worst8);
    CHECK(worst16 > 0.01 && worst16 <= 1.0, "int16 err/bound %.3g", worst16);
}

/* Constant matrices: every A entry a, every B entry b (k x n). */
static void fill_const(problem *p, float a, float b) {
    for (int64_t i = 0; i < p->m; i++) {
        for (int64_t k = 0; k < p->k; k++) {
            p->a[i * p->lda + k] = a;
        }
    }
    for (int64_t i = 0; i < p->k * p->n; i++) {
        p->b[i] = b;
    }
    for (int64_t j = 0; j < p->n; j++) {
        p->bias[j] = 0.25f * (float)(j % 3);
    }
}

static void test_extremes(void) {
    static const int64_t shapes[][3] = {{1, 513, 17}, {7, 100, 257}, {33, 64, 5}, {2, 3, 1}};
    for (size_t s = 0; s < 4; s++) {
        problem p;
        problem_alloc(&p, shapes[s][0], shapes[s][1], shapes[s][2]);
        int32_t *want = xalloc((size_t)(p.m * p.n) * sizeof(int32_t));
        /* int8: +max x -max everywhere: acc = -127 * 127 * k, the largest
        ** magnitudes, A + 128 = 255 in the shifted scheme; then -max x -max */
        static const float pairs[][2] = {{3.0f, -0.5f}, {-3.0f, -0.5f}, {-1.0f, 1.0f}};
        for (int q = 0; q < 3; q++) {
            fill_const(&p, pairs[q][0], pairs[q][1]);
            void *pk = pack(8, &p);
            kcpu_packed_info info;
            kcpu_packed_get_info(pk, &info);
            float qa = oracle_acc(8, &p, info.qb, want);
            int32_t expect = (pairs[q][0] > 0) == (pairs[q][1] > 0) ? 127 * 127 : -127 * 127;
            CHECK(want[0] == expect * (int32_t)p.k, "oracle extreme %d", want[0]);
            check_acc_all(8, &p, pk, want, qa, "+-max");
            check_f32_all(8, &p, pk, "+-max");
            mt_aligned_free(pk);
        }
        /* alternating signs along k and n, with zeros between */
        for (int64_t i = 0; i < p.m; i++) {
            for (int64_t k = 0; k < p.k; k++) {
                p.a[i * p.lda + k] = (float)((i + k) % 3 - 1) * 2.0f;
            }
        }
        for (int64_t i = 0; i < p.k * p.n; i++) {
            p.b[i] = (float)(i % 5 - 2) * 0.5f;
        }
        for (int bits = 8; bits <= 16; bits += 8) {
            void *pk = pack(bits, &p);
            kcpu_packed_info info;
            kcpu_packed_get_info(pk, &info);
            float qa = oracle_acc(bits, &p, info.qb, want);
            check_acc_all(bits, &p, pk, want, qa, "alternating");
            check_f32_all(bits, &p, pk, "alternating");
            mt_aligned_free(pk);
        }
        /* all-zero A, then all-zero B: multiplier 1, no division by zero,
        ** C = bias exactly */
        for (int z = 0; z < 2; z++) {
            fill_const(&p, z == 0 ? 0.0f : 1.5f, z == 0 ? 0.75f : 0.0f);
            for (int bits = 8; bits <= 16; bits += 8) {
                void *pk = pack(bits, &p);
                kcpu_packed_info info;
                kcpu_packed_get_info(pk, &info);
                if (bits == 8 && z == 1) {
                    CHECK(info.qb == 1.0f, "qb of a zero matrix is 1: %g", info.qb);
                }
                float qa = oracle_acc(bits, &p, info.qb, want);
                CHECK(bits == 16 || z == 1 || qa == 1.0f, "qa of a zero matrix is 1");
                check_acc_all(bits, &p, pk, want, qa, z == 0 ? "zero A" : "zero B");
                int64_t ldc = p.n;
                float *c = xalloc((size_t)(p.m * ldc) * sizeof(float));
                for (int v = 0; v < N_IMPLS; v++) {
                    if (!kcpu_igemm_available(all_impls[v])) {
                        continue;
                    }
                    run_f32(bits, all_impls[v], &p, pk, p.bias, c, ldc);
                    int bad = 0;
                    for (int64_t i = 0; i < p.m * p.n; i++) {
                        bad += c[i] != p.bias[i % p.n];
                    }
                    CHECK(bad == 0, "int%d %s zero matrix: C != bias in %d places", bits,
                          kcpu_igemm_name(all_impls[v]), bad);
                }
                mt_aligned_free(c);
                mt_aligned_free(pk);
            }
        }
        /* int16 clipping (|x| >= 32 saturates) and wrap-around of the int32
        ** sums: 32767 * -32768 * k, and (-32768)^2 twice in one vpmaddwd pair
        ** (2^31, which wraps to -2^31) */
        static const float clip[][2] = {{40.0f, -40.0f}, {-40.0f, -40.0f}, {32.5f, 31.0f}};
        for (int q = 0; q < 3; q++) {
            fill_const(&p, clip[q][0], clip[q][1]);
            void *pk = pack(16, &p);
            float qa = oracle_acc(16, &p, 1024.0f, want);
            int32_t qa16 = clip[q][0] > 0 ? 32767 : -32768, qb16 = clip[q][1] > 0 ? 31744 : -32768;
            CHECK(want[0] == wrap32((int64_t)qa16 * qb16 * p.k), "oracle clip %d", want[0]);
            check_acc_all(16, &p, pk, want, qa, "int16 clip/wrap");
            mt_aligned_free(pk);
        }
        /* pre-quantized int8 weights holding -128: packed as -127 */
        {
            int8_t *bq = xalloc((size_t)(p.k * p.n));
            for (int64_t i = 0; i < p.k * p.n; i++) {
                bq[i] = (int8_t)(i % 3 == 0 ? -128 : (int)(i % 255) - 127);
            }
            fill_const(&p, -2.0f, 0.0f);
            void *pk = xalloc(kcpu_pack_i8_bytes(p.k, p.n));
            int64_t cl = kcpu_pack_i8_q(p.k, p.n, bq, p.n, false, 10.0f, pk);
            CHECK(cl == (p.k * p.n + 2) / 3, "clamped %lld", (long long)cl);
            for (int64_t i = 0; i < p.m; i++) {
                for (int64_t j = 0; j < p.n; j++) {
                    int64_t sum = 0;
                    for (int64_t k = 0; k < p.k; k++) {
                        int v = bq[k * p.n + j];
                        sum += -127 * (v == -128 ? -127 : v);
                    }
                    want[i * p.n + j] = wrap32(sum);
                }
            }
            check_acc_all(8, &p, pk, want, 63.5f, "pre-quantized -128");
            mt_aligned_free(bq);
            mt_aligned_free(pk);
        }
        mt_aligned_free(want);
        problem_free(&p);
    }
}

static void test_dispatch(void) {
    problem p;
    problem_alloc(&p, 5, 77, 70);
    for (int64_t i = 0; i < p.m; i++) {
        for (int64_t k = 0; k < p.k; k++) {
            p.a[i * p.lda + k] = test_urand(-1.0f, 1.0f);
        }
    }
    for (int64_t i = 0; i < p.k * p.n; i++) {
        p.b[i] = test_urand(-1.0f, 1.0f);
    }
    kcpu_isa best = kcpu_isa_detect();
    for (int bits = 8; bits <= 16; bits += 8) {
        void *pk = pack(bits, &p);
        size_t cn = (size_t)(p.m * p.n);
        float *c = xalloc(cn * sizeof(float)), *w = xalloc(cn * sizeof(float));
        size_t sb = kcpu_gemm_i8_scratch_bytes(p.m, p.k) > kcpu_gemm_i16_scratch_bytes(p.m, p.k)
                        ? kcpu_gemm_i8_scratch_bytes(p.m, p.k)
                        : kcpu_gemm_i16_scratch_bytes(p.m, p.k);
        void *scratch = xalloc(sb);
        for (int lvl = KCPU_ISA_REF; lvl <= (int)best; lvl++) {
            kcpu_isa old = kcpu_isa_force((kcpu_isa)lvl);
            kcpu_igemm_impl act = kcpu_igemm_active();
            kcpu_igemm_impl want_impl = lvl == KCPU_ISA_REF                     ? KCPU_IGEMM_REF
                                        : lvl == KCPU_ISA_AVX2                  ? KCPU_IGEMM_AVX2
                                        : kcpu_igemm_available(KCPU_IGEMM_VNNI) ? KCPU_IGEMM_VNNI
                                                                                : KCPU_IGEMM_AVX2;
            CHECK(act == want_impl, "isa %s -> %s, want %s", kcpu_isa_name((kcpu_isa)lvl),
                  kcpu_igemm_name(act), kcpu_igemm_name(want_impl));
            if (bits == 8) {
                kcpu_gemm_i8(p.m, p.a, p.lda, pk, NULL, c, p.n, scratch);
                kcpu_gemm_i8_impl(act, p.m, p.a, p.lda, pk, NULL, w, p.n, scratch);
            } else {
                kcpu_gemm_i16(p.m, p.a, p.lda, pk, NULL, c, p.n, scratch);
                kcpu_gemm_i16_impl(act, p.m, p.a, p.lda, pk, NULL, w, p.n, scratch);
            }
            CHECK(memcmp(c, w, cn * sizeof(float)) == 0, "int%d dispatch at %s", bits,
                  kcpu_isa_name((kcpu_isa)lvl));
            kcpu_isa_force(old);
        }
        /* m = 0 writes nothing */
        c[0] = 42.0f;
        if (bits == 8) {
            kcpu_gemm_i8(0, p.a, p.lda, pk, NULL, c, p.n, scratch);
        } else {
            kcpu_gemm_i16(0, p.a, p.lda, pk, NULL, c, p.n, scratch);
        }
        CHECK(c[0] == 42.0f, "m = 0 wrote");
        mt_aligned_free(c), mt_aligned_free(w), mt_aligned_free(scratch), mt_aligned_free(pk);
    }
    problem_free(&p);
    fprintf(stderr, "isa %s, vnni %d, int gemm variants:", kcpu_isa_name(best),
            kcpu_cpu_has_avx512_vnni());
    for (int v = 0; v < N_IMPLS; v++) {
        fprintf(stderr, " %s%s", kcpu_igemm_name(all_impls[v]),
                kcpu_igemm_available(all_impls[v]) ? "" : "(n/a)");
    }
    fprintf(stderr, "\n");
}

/* kcpu_pack_select: the selected columns (repeats, any order, across
** panels) of a packed B hold the same quantized values and corrections, and
** a product with them equals those columns of the whole product bit for bit,
** in every variant. */
static void test_select(void) {
    static const int64_t shape[][3] = {{3, 45, 200}, {5, 64, 130}, {1, 7, 64}, {4, 256, 333}};
    for (size_t t = 0; t < sizeof shape / sizeof shape[0]; t++) {
        problem p;
        problem_alloc(&p, shape[t][0], shape[t][1], shape[t][2]);
        for (int64_t i = 0; i < p.m; i++)
            for (int64_t k = 0; k < p.k; k++)
                p.a[i * p.lda + k] = test_urand(-3.0f, 3.0f);
        for (int64_t i = 0; i < p.k * p.n; i++)
            p.b[i] = test_urand(-0.5f, 0.5f);
        int64_t ns = p.n / 3 + 70; /* more than a panel; repeats allowed */
        int32_t *cols = xalloc(sizeof(int32_t) * (size_t)ns);
        for (int64_t j = 0; j < ns; j++)
            cols[j] = (int32_t)((j * 37 + (j % 5) * 101) % p.n);
        cols[0] = (int32_t)p.n - 1;
        for (int bits = 8; bits <= 16; bits += 8) {
            void *pk = pack(bits, &p);
            size_t sb = bits == 8 ? kcpu_pack_i8_bytes(p.k, ns) : kcpu_pack_i16_bytes(p.k, ns);
            void *sel = xalloc(sb);
            memset(sel, 0x5a, sb); /* padding must be written */
            kcpu_pack_select(pk, ns, cols, sel);
            kcpu_packed_info fi, si;
            CHECK(kcpu_packed_get_info(pk, &fi) && kcpu_packed_get_info(sel, &si), "headers");
            CHECK(si.k == p.k && si.n == ns && si.qb == fi.qb && si.bytes == sb && si.bits == bits,
                  "select header k %lld n %lld", (long long)si.k, (long long)si.n);
            { /* the padding columns of the last panel and their corrections: zeros */
                const unsigned char *body = (const unsigned char *)sel + 64;
                const int32_t *corr = (const int32_t *)body;
                if (bits == 8) body += si.np * 4;
                size_t panel = (size_t)(si.kp * KCPU_IGEMM_NC) * (size_t)(bits / 8);
                const unsigned char *last = body + (size_t)(si.np / KCPU_IGEMM_NC - 1) * panel;
                int64_t units = si.kp * bits / 32, nz = 0;
                for (int64_t u = 0; u < units; u++)
                    for (int64_t c = ns % KCPU_IGEMM_NC; c > 0 && c < KCPU_IGEMM_NC; c++) {
                        for (int b = 0; b < 4; b++)
                            nz += last[(size_t)u * KCPU_IGEMM_NC * 4 + (size_t)c * 4 + (size_t)b] !=
                                  0;
                    }
                for (int64_t j = ns; bits == 8 && j < si.np; j++)
                    nz += corr[j] != 0;
                CHECK(nz == 0, "%d-bit select: %lld padding bytes or corrections not zero", bits,
                      (long long)nz);
            }
            size_t eb = (size_t)(bits / 8);
            char *full = xalloc((size_t)(p.k * p.n) * eb), *part = xalloc((size_t)(p.k * ns) * eb);
            if (bits == 8) {
                kcpu_unpack_i8(pk, (int8_t *)full);
                kcpu_unpack_i8(sel, (int8_t *)part);
            } else {
                kcpu_unpack_i16(pk, (int16_t *)full);
                kcpu_unpack_i16(sel, (int16_t *)part);
            }
            int bad = 0;
            for (int64_t k = 0; k < p.k; k++)
                for (int64_t j = 0; j < ns; j++)
                    bad += memcmp(part + (size_t)(k * ns + j) * eb,
                                  full + (size_t)(k * p.n + cols[j]) * eb, eb) != 0;
            CHECK(bad == 0, "%d-bit select [%lld x %lld]: %d values differ", bits, (long long)p.k,
                  (long long)ns, bad);
            for (size_t v = 0; v < sizeof all_impls / sizeof all_impls[0]; v++) {
                if (!kcpu_igemm_available(all_impls[v])) continue;
                float *cf = xalloc(sizeof(float) * (size_t)(p.m * p.n));
                float *cs = xalloc(sizeof(float) * (size_t)(p.m * ns));
                problem q = p;
                run_f32(bits, all_impls[v], &p, pk, NULL, cf, p.n);
                q.n = ns;
                run_f32(bits, all_impls[v], &q, sel, NULL, cs, ns);
                int diff = 0;
                for (int64_t i = 0; i < p.m; i++)
                    for (int64_t j = 0; j < ns; j++)
                        diff += memcmp(&cs[i * ns + j], &cf[i * p.n + cols[j]], sizeof(float)) != 0;
                CHECK(diff == 0, "%s %d-bit: %d products of the selection differ",
                      kcpu_igemm_name(all_impls[v]), bits, diff);
                mt_aligned_free(cf);
                mt_aligned_free(cs);
            }
            mt_aligned_free(full);
            mt_aligned_free(part);
            mt_aligned_free(sel);
            mt_aligned_free(pk);
        }
        mt_aligned_free(cols);
        problem_free(&p);
    }
}

/* k = 0 (allowed by the packers): every variant gives C = bias and zero
** accumulators, whatever the row and column counts (row blocks of 4, 2, 1;
** one panel and more). */
static void test_empty_k(void) {
    static const int64_t ms[] = {1, 2, 3, 5};
    static const int64_t ns[] = {5, 70};
    float a[5] = {1.0f, -2.0f, 3.0f, -4.0f, 5.0f};
    for (size_t mi = 0; mi < 4; mi++) {
        for (size_t ni = 0; ni < 2; ni++) {
            int64_t m = ms[mi], n = ns[ni];
            float *bias = xalloc((size_t)n * sizeof(float));
            float *c = xalloc((size_t)(m * n) * sizeof(float));
            int32_t *acc = xalloc((size_t)(m * n) * sizeof(int32_t));
            void *scratch =
                xalloc(kcpu_gemm_i16_scratch_bytes(m, 0) + kcpu_gemm_i8_scratch_bytes(m, 0));
            for (int64_t j = 0; j < n; j++) {
                bias[j] = 0.5f * (float)j - 3.0f;
            }
            for (int bits = 8; bits <= 16; bits += 8) {
                size_t bytes = bits == 8 ? kcpu_pack_i8_bytes(0, n) : kcpu_pack_i16_bytes(0, n);
                void *pk = xalloc(bytes);
                if (bits == 8) {
                    kcpu_pack_i8(0, n, a, n, pk);
                } else {
                    kcpu_pack_i16(0, n, a, n, pk);
                }
                for (size_t v = 0; v < sizeof all_impls / sizeof all_impls[0]; v++) {
                    kcpu_igemm_impl impl = all_impls[v];
                    if (!kcpu_igemm_available(impl)) {
                        continue;
                    }
                    for (int64_t i = 0; i < m * n; i++) {
                        c[i] = NAN;
                        acc[i] = -1;
                    }
                    if (bits == 8) {
                        kcpu_gemm_i8_impl(impl, m, a, 1, pk, bias, c, n, scratch);
                        kcpu_gemm_i8_acc(impl, m, a, 1, pk, acc, n, scratch);
                    } else {
                        kcpu_gemm_i16_impl(impl, m, a, 1, pk, bias, c, n, scratch);
                        kcpu_gemm_i16_acc(impl, m, a, 1, pk, acc, n, scratch);
                    }
                    int64_t bad = 0;
                    for (int64_t i = 0; i < m * n; i++) {
                        bad += c[i] != bias[i % n] || acc[i] != 0;
                    }
                    CHECK(bad == 0, "k=0 %s int%d m=%lld n=%lld: %lld wrong", kcpu_igemm_name(impl),
                          bits, (long long)m, (long long)n, (long long)bad);
                }
                mt_aligned_free(pk);
            }
            mt_aligned_free(bias), mt_aligned_free(c), mt_aligned_free(acc);
            mt_aligned_free(scratch);
        }
    }
}

/* The relu epilogue (kcpu_gemm_int_ex): every variant's output equals the
** same variant's plain output with negatives (and -0) set to +0, bit for
** bit; the column padding of C stays; both signs occur. */
static void test_relu(void) {
    static const int64_t ms[] = {1, 5, 7, 13}, ks[] = {3, 64, 100}, ns[] = {5, 17, 100};
    int bad = 0, neg = 0, pos = 0;
    for (size_t mi = 0; mi < 4; mi++)
        for (size_t ki = 0; ki < 3; ki++)
            for (size_t ni = 0; ni < 3; ni++) {
                problem p;
                problem_alloc(&p, ms[mi], ks[ki], ns[ni]);
                problem_random(&p);
                int64_t ldc = p.n + 3;
                float *c0 = xalloc(sizeof(float) * (size_t)(p.m * ldc));
                float *c1 = xalloc(sizeof(float) * (size_t)(p.m * ldc));
                for (int bits = 8; bits <= 16; bits += 8) {
                    void *pk = pack(bits, &p);
                    size_t sb = bits == 8 ? kcpu_gemm_i8_scratch_bytes(p.m, p.k)
                                          : kcpu_gemm_i16_scratch_bytes(p.m, p.k);
                    char *scratch = xalloc(sb + 64);
                    for (size_t v = 0; v < 3; v++) {
                        if (!kcpu_igemm_available(all_impls[v])) continue;
                        for (int64_t i = 0; i < p.m * ldc; i++)
                            c0[i] = c1[i] = -7.0f;
                        kcpu_gemm_int_ex(bits, all_impls[v], p.m, p.a, p.lda, pk, p.bias, false,
                                         c0, ldc, scratch);
                        kcpu_gemm_int_ex(bits, all_impls[v], p.m, p.a, p.lda, pk, p.bias, true,
                                         c1, ldc, scratch);
                        for (int64_t i = 0; i < p.m; i++)
                            for (int64_t j = 0; j < ldc; j++) {
                                float x = c0[i * ldc + j], want = j >= p.n ? -7.0f
                                                                  : x > 0.0f ? x
                                                                             : 0.0f;
                                bad += memcmp(&c1[i * ldc + j], &want, sizeof want) != 0;
                                neg += j < p.n && x < 0.0f;
                                pos += j < p.n && x > 0.0f;
                            }
                    }
                    mt_aligned_free(scratch);
                    mt_aligned_free(pk);
                }
                mt_aligned_free(c0);
                mt_aligned_free(c1);
                problem_free(&p);
            }
    CHECK(bad == 0, "relu epilogue: %d outputs differ from max(plain output, 0)", bad);
    CHECK(neg > 100 && pos > 100, "relu epilogue: %d negative, %d positive outputs", neg, pos);
}

/* kcpu_gemm_int_res: every variant gives its own product + bias followed by
** the float sum with the residual, bit for bit, also with the residual in
** C itself, and leaves the columns past n alone. */
static void test_res(void) {
    static const int64_t ms[] = {1, 6, 7, 29}, ns[] = {5, 16, 70, 256};
    int bad = 0, changed = 0;
    for (size_t mi = 0; mi < 4; mi++)
        for (size_t ni = 0; ni < 4; ni++) {
            problem p;
            problem_alloc(&p, ms[mi], 48, ns[ni]);
            problem_random(&p);
            int64_t ldc = p.n + 5;
            size_t cb = sizeof(float) * (size_t)(p.m * ldc);
            float *res = xalloc(cb), *c0 = xalloc(cb), *c1 = xalloc(cb), *c2 = xalloc(cb);
            for (int64_t i = 0; i < p.m * ldc; i++)
                res[i] = test_urand(-3.0f, 3.0f);
            for (int bits = 8; bits <= 16; bits += 8) {
                void *pk = pack(bits, &p);
                char *scratch = xalloc(kcpu_gemm_i16_scratch_bytes(p.m, p.k) +
                                       kcpu_gemm_i8_scratch_bytes(p.m, p.k));
                for (size_t v = 0; v < 3; v++) {
                    if (!kcpu_igemm_available(all_impls[v])) continue;
                    for (int nb = 0; nb < 2; nb++) {
                        const float *bias = nb ? p.bias : NULL;
                        for (int64_t i = 0; i < p.m * ldc; i++)
                            c0[i] = c1[i] = -7.0f;
                        memcpy(c2, res, cb);
                        kcpu_gemm_int_ex(bits, all_impls[v], p.m, p.a, p.lda, pk, bias, false, c0,
                                         ldc, scratch);
                        kcpu_gemm_int_res(bits, all_impls[v], p.m, p.a, p.lda, pk, bias, res, ldc,
                                          c1, ldc, scratch);
                        kcpu_gemm_int_res(bits, all_impls[v], p.m, p.a, p.lda, pk, bias, c2, ldc,
                                          c2, ldc, scratch); /* in place */
                        for (int64_t i = 0; i < p.m; i++)
                            for (int64_t j = 0; j < ldc; j++) {
                                int64_t at = i * ldc + j;
                                float want = j < p.n ? c0[at] + res[at] : -7.0f;
                                float want2 = j < p.n ? want : res[at];
                                bad += memcmp(&c1[at], &want, sizeof want) != 0 ||
                                       memcmp(&c2[at], &want2, sizeof want2) != 0;
                                changed += j < p.n && want != c0[at];
                            }
                    }
                }
                mt_aligned_free(scratch);
                mt_aligned_free(pk);
            }
            mt_aligned_free(res), mt_aligned_free(c0), mt_aligned_free(c1), mt_aligned_free(c2);
            problem_free(&p);
        }
    CHECK(bad == 0, "residual epilogue: %d outputs differ from the product + residual", bad);
    CHECK(changed > 1000, "residual epilogue: only %d outputs moved by the residual", changed);
}

/* kcpu_gemm_int_quant + kcpu_gemm_int_prepared: one quantized activation
** used by two products with different weights (one with bias and relu, one
** with a residual), each equal to the one-call product bit for bit. */
static void test_prepared(void) {
    static const int64_t ms[] = {1, 7, 29}, ks[] = {5, 64, 100};
    int bad = 0, used = 0;
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t ki = 0; ki < 3; ki++) {
            problem p, p2;
            problem_alloc(&p, ms[mi], ks[ki], 70);
            problem_alloc(&p2, ms[mi], ks[ki], 33);
            for (int64_t i = 0; i < p.m * p.lda; i++)
                p.a[i] = p2.a[i] = test_urand(-2.0f, 2.0f);
            for (int64_t i = 0; i < p.k * p.n; i++)
                p.b[i] = test_urand(-0.5f, 0.5f);
            for (int64_t i = 0; i < p2.k * p2.n; i++)
                p2.b[i] = test_urand(-0.5f, 0.5f);
            for (int64_t j = 0; j < p.n; j++)
                p.bias[j] = test_urand(-1.0f, 1.0f);
            float *res = xalloc(sizeof(float) * (size_t)(p.m * p2.n));
            for (int64_t i = 0; i < p.m * p2.n; i++)
                res[i] = test_urand(-1.0f, 1.0f);
            size_t cb = sizeof(float) * (size_t)(p.m * p.n);
            float *w1 = xalloc(cb), *g1 = xalloc(cb), *w2 = xalloc(cb), *g2 = xalloc(cb);
            for (int bits = 8; bits <= 16; bits += 8) {
                void *pk = pack(bits, &p), *pk2 = pack(bits, &p2);
                size_t sb = bits == 8 ? kcpu_gemm_i8_scratch_bytes(p.m, p.k)
                                      : kcpu_gemm_i16_scratch_bytes(p.m, p.k);
                char *s1 = xalloc(sb + 9), *s2 = xalloc(sb);
                for (size_t v = 0; v < 3; v++) {
                    if (!kcpu_igemm_available(all_impls[v])) continue;
                    kcpu_gemm_int_ex(bits, all_impls[v], p.m, p.a, p.lda, pk, p.bias, true, w1, p.n,
                                     s2);
                    kcpu_gemm_int_res(bits, all_impls[v], p.m, p.a, p.lda, pk2, NULL, res, p2.n, w2,
                                      p2.n, s2);
                    float qa =
                        kcpu_gemm_int_quant(bits, all_impls[v], p.m, p.k, p.a, p.lda, s1 + 9);
                    kcpu_gemm_int_prepared(bits, all_impls[v], p.m, s1 + 9, qa, pk, p.bias, true,
                                           NULL, 0, g1, p.n);
                    kcpu_gemm_int_prepared(bits, all_impls[v], p.m, s1 + 9, qa, pk2, NULL, false,
                                           res, p2.n, g2, p2.n);
                    bad += memcmp(w1, g1, sizeof(float) * (size_t)(p.m * p.n)) != 0;
                    bad += memcmp(w2, g2, sizeof(float) * (size_t)(p.m * p2.n)) != 0;
                    used += 2;
                }
                mt_aligned_free(s1), mt_aligned_free(s2), mt_aligned_free(pk), mt_aligned_free(pk2);
            }
            mt_aligned_free(res), mt_aligned_free(w1), mt_aligned_free(g1), mt_aligned_free(w2);
            mt_aligned_free(g2);
            problem_free(&p);
            problem_free(&p2);
        }
    CHECK(bad == 0 && used > 0, "prepared activation: %d of %d products differ from one call", bad,
          used);
}

/* kcpu_gemm_int_max: max|C| as kcpu_maxabs_f32 finds it (also with NaN and
** relu), and with max|A| given the C of the one-call product. */
static void test_max(void) {
    static const int64_t ms[] = {1, 7, 29}, ns[] = {5, 64, 70};
    int bad = 0, runs = 0;
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t ni = 0; ni < 3; ni++) {
            problem p;
            problem_alloc(&p, ms[mi], 40, ns[ni]);
            problem_random(&p);
            size_t cb = sizeof(float) * (size_t)(p.m * p.n);
            float *res = xalloc(cb), *c0 = xalloc(cb), *c1 = xalloc(cb);
            for (int64_t i = 0; i < p.m * p.n; i++)
                res[i] = i == 3 ? NAN : test_urand(-1.0f, 1.0f); /* a NaN in C */
            void *pk = pack(8, &p);
            char *scratch = xalloc(kcpu_gemm_i8_scratch_bytes(p.m, p.k));
            float am = kcpu_maxabs_f32(p.m, p.k, p.a, p.lda);
            for (size_t v = 0; v < 3; v++) {
                if (!kcpu_igemm_available(all_impls[v])) continue;
                for (int form = 0; form < 2; form++) { /* relu; residual */
                    bool relu = form == 0;
                    const float *r = form == 1 ? res : NULL;
                    float cm = -5.0f;
                    if (relu)
                        kcpu_gemm_int_ex(8, all_impls[v], p.m, p.a, p.lda, pk, p.bias, true, c0,
                                         p.n, scratch);
                    else
                        kcpu_gemm_int_res(8, all_impls[v], p.m, p.a, p.lda, pk, p.bias, res, p.n,
                                          c0, p.n, scratch);
                    kcpu_gemm_int_max(8, all_impls[v], p.m, p.a, p.lda, pk, p.bias, relu, r, am,
                                      &cm, c1, p.n, scratch);
                    bad += memcmp(c0, c1, cb) != 0;
                    bad += cm != kcpu_maxabs_f32(p.m, p.n, c0, p.n) || !(cm > 0.0f);
                    runs++;
                }
            }
            mt_aligned_free(scratch), mt_aligned_free(pk), mt_aligned_free(res);
            mt_aligned_free(c0), mt_aligned_free(c1);
            problem_free(&p);
        }
    CHECK(bad == 0 && runs > 0, "max epilogue: %d of %d products or maxima differ", bad, runs);
}

/* kcpu_gemm_int_argmax: every variant gives the argmax and value of
** kcpu_argmax_rows over the same variant's C (+ skip) exactly: odd shapes
** (row blocks, panels, vector tails), bias or not, skip or not, repeated B
** columns (exact ties: the first), rows whose every column is skipped
** (column 0, -inf). */
static void test_argmax(void) {
    static const int64_t ms[] = {1, 5, 7, 29}, ns[] = {1, 17, 64, 65, 200, 1000};
    int bad = 0, ties = 0, tie_rows = 0, empty = 0;
    for (size_t mi = 0; mi < 4; mi++)
        for (size_t ni = 0; ni < 6; ni++)
            for (int variant = 0; variant < 3; variant++) {
                bool with_bias = variant != 1, with_skip = variant != 0;
                problem p;
                problem_alloc(&p, ms[mi], 40, ns[ni]);
                problem_random(&p);
                /* columns j + 9 (another lane) and j + 16 (the same lane of
                ** the next vector) repeat column j (its bias too), all made
                ** the favourites of rows with a[i][0] > 0: exact ties */
                for (int64_t j = 3; j + 16 < p.n && j < 80; j += 37) {
                    p.b[j] += 3.0f;
                    for (int64_t k = 0; k < p.k; k++)
                        p.b[k * p.n + j + 9] = p.b[k * p.n + j + 16] = p.b[k * p.n + j];
                    p.bias[j + 9] = p.bias[j + 16] = p.bias[j];
                }
                float *skip = xalloc(sizeof(float) * (size_t)p.n);
                for (int64_t j = 0; j < p.n; j++)
                    skip[j] = j % 7 == 2 ? -INFINITY : 0.0f;
                if (with_skip && p.n == 17)
                    for (int64_t j = 0; j < p.n; j++)
                        skip[j] = -INFINITY; /* nothing left */
                const float *bias = with_bias ? p.bias : NULL, *sk = with_skip ? skip : NULL;
                float *c = xalloc(sizeof(float) * (size_t)(p.m * p.n));
                int32_t *wi = xalloc(sizeof(int32_t) * (size_t)p.m),
                        *gi = xalloc(sizeof(int32_t) * (size_t)p.m);
                float *wv = xalloc(sizeof(float) * (size_t)p.m),
                      *gv = xalloc(sizeof(float) * (size_t)p.m);
                for (int bits = 8; bits <= 16; bits += 8) {
                    void *pk = pack(bits, &p);
                    for (size_t v = 0; v < 3; v++) {
                        if (!kcpu_igemm_available(all_impls[v])) continue;
                        size_t sb =
                            kcpu_gemm_int_argmax_scratch_bytes(bits, all_impls[v], p.m, p.k, p.n);
                        char *scratch = xalloc(sb + 7);
                        size_t sc = bits == 8 ? kcpu_gemm_i8_scratch_bytes(p.m, p.k)
                                              : kcpu_gemm_i16_scratch_bytes(p.m, p.k);
                        char *s2 = xalloc(sc);
                        kcpu_gemm_int_ex(bits, all_impls[v], p.m, p.a, p.lda, pk, bias, false, c,
                                         p.n, s2);
                        kcpu_argmax_rows_ref(p.m, p.n, c, sk, wi, wv);
                        kcpu_gemm_int_argmax(bits, all_impls[v], p.m, p.a, p.lda, pk, bias, sk, gi,
                                             gv, scratch + 7);
                        for (int64_t i = 0; i < p.m; i++) {
                            bad += gi[i] != wi[i] || memcmp(&gv[i], &wv[i], sizeof(float)) != 0;
                            empty += wv[i] == -INFINITY;
                            for (int64_t j = 0; j < p.n; j++) /* the winner has a later copy */
                                if (j != wi[i] && c[i * p.n + j] + (sk ? sk[j] : 0.0f) == wv[i] &&
                                    wv[i] > -INFINITY)
                                    ties++, j = p.n;
                        }
                        tie_rows += p.m;
                        mt_aligned_free(scratch);
                        mt_aligned_free(s2);
                    }
                    mt_aligned_free(pk);
                }
                mt_aligned_free(skip), mt_aligned_free(c), mt_aligned_free(wi), mt_aligned_free(gi);
                mt_aligned_free(wv), mt_aligned_free(gv);
                problem_free(&p);
            }
    CHECK(bad == 0, "argmax epilogue: %d rows differ from the scan of C", bad);
    CHECK(ties > 20 && empty > 0, "argmax epilogue: %d tied winners of %d rows, %d empty rows",
          ties, tie_rows, empty);
}

static void test_topk_paths(void) {
    static const int64_t shape[][3] = {{1, 40, 7}, {7, 40, 65},     {29, 33, 200},
                                       {4, 40, 3}, {101, 24, 4099}, {250, 17, 1777}};
    static const int32_t ks[] = {1, 5, 9};
    int bad = 0, runs = 0, blocked = 0, pads = 0;
    for (size_t si = 0; si < sizeof shape / sizeof shape[0]; si++) {
        problem p;
        problem_alloc(&p, shape[si][0], shape[si][1], shape[si][2]);
        problem_random(&p);
        for (int64_t j = 2; j + 5 < p.n; j += 61) { /* column j + 5 repeats column j */
            for (int64_t k = 0; k < p.k; k++)
                p.b[k * p.n + j + 5] = p.b[k * p.n + j];
            p.bias[j + 5] = p.bias[j];
        }
        blocked += p.m * p.n * 4 > 1536 * 1024;
        float *c = xalloc(sizeof(float) * (size_t)(p.m * p.n));
        for (int bits = 8; bits <= 16; bits += 8) {
            void *pk = pack(bits, &p);
            for (size_t v = 0; v < 3; v++) {
                if (!kcpu_igemm_available(all_impls[v])) continue;
                size_t sc = bits == 8 ? kcpu_gemm_i8_scratch_bytes(p.m, p.k)
                                      : kcpu_gemm_i16_scratch_bytes(p.m, p.k);
                char *s1 = xalloc(sc);
                char *s2 = xalloc(kcpu_gemm_int_topk_scratch_bytes(bits, p.m, p.k, p.n) + 5);
                kcpu_gemm_int_ex(bits, all_impls[v], p.m, p.a, p.lda, pk, p.bias, false, c, p.n,
                                 s1);
                for (size_t ki = 0; ki < 3; ki++) {
                    int32_t k = ks[ki];
                    size_t e = (size_t)(p.m * k);
                    int32_t *wi = xalloc(sizeof(int32_t) * e), *gi = xalloc(sizeof(int32_t) * e);
                    float *wv = xalloc(sizeof(float) * e), *gv = xalloc(sizeof(float) * e);
                    kcpu_softmax_topk(p.m, p.n, c, NULL, k, wi, wv, NULL);
                    kcpu_gemm_int_topk(bits, all_impls[v], p.m, p.a, p.lda, pk, p.bias, k, gi, gv,
                                       s2 + 5);
                    bad += memcmp(wi, gi, sizeof(int32_t) * e) != 0 ||
                           memcmp(wv, gv, sizeof(float) * e) != 0;
                    for (size_t i = 0; i < e; i++)
                        pads += gi[i] < 0 && gv[i] == -INFINITY;
                    runs++;
                    mt_aligned_free(wi), mt_aligned_free(gi), mt_aligned_free(wv),
                        mt_aligned_free(gv);
                }
                mt_aligned_free(s1), mt_aligned_free(s2);
            }
            mt_aligned_free(pk);
        }
        mt_aligned_free(c);
        problem_free(&p);
    }
    CHECK(bad == 0 && runs > 0, "[%s] top-k in blocks: %d of %d results differ from the scan of C",
          kcpu_isa_name(kcpu_isa_active()), bad, runs);
    CHECK(blocked == 2 && pads > 0, "top-k in blocks: %d shapes in blocks, %d padding entries",
          blocked, pads);
}

/* kcpu_gemm_int_topk: every variant gives kcpu_softmax_topk of the same
** variant's C (+ bias) bit for bit, indices and log-probabilities, on both
** of its paths (kcpu_isa_force): C in pieces of columns (AVX-512: one piece
** and several, one block of rows and two) and C in blocks of rows (AVX2:
** one block for small products, several where C is over 1.5 MB), every
** block quantized with the qa of all rows; k above the columns (-1 / -inf
** entries), repeated columns (ties: the lower column first). */
static void test_topk_blocks(void) {
    kcpu_isa best = kcpu_isa_detect();
    int pieces = 0, blocks = 0;
    for (int lvl = KCPU_ISA_AVX2; lvl <= (int)best; lvl++) {
        if (lvl != KCPU_ISA_AVX2 && lvl != (int)best) continue;
        kcpu_isa old = kcpu_isa_force((kcpu_isa)lvl);
        pieces += kcpu_topk_resumable(), blocks += !kcpu_topk_resumable();
        test_topk_paths();
        kcpu_isa_force(old);
    }
    CHECK(blocks == (best >= KCPU_ISA_AVX2) && pieces <= 1,
          "top-k: %d runs in pieces, %d in blocks", pieces, blocks);
    if (pieces == 0) fprintf(stderr, "top-k in pieces: not on this machine or build\n");
}

/* kcpu_pack_select of ascending columns (a shortlist: the AVX-512 path,
** which compresses each source panel's run of columns) equals the column by
** column oracle byte for byte, header, corrections and padding included,
** whatever the output buffer held: every column, sparse and dense random
** subsets (runs crossing output panels), one column, k and n not multiples
** of the group or panel. */
static void test_select_ascending(void) {
    static const int64_t shape[][2] = {{7, 200}, {256, 1000}, {13, 130}, {64, 64}, {5, 1}};
    static const double density[] = {1.0, 0.05, 0.5, 0.9, 0.0};
    int cases = 0;
    for (size_t t = 0; t < sizeof shape / sizeof shape[0]; t++) {
        problem p;
        problem_alloc(&p, 1, shape[t][0], shape[t][1]);
        for (int64_t i = 0; i < p.k * p.n; i++)
            p.b[i] = test_urand(-0.5f, 0.5f);
        int32_t *cols = xalloc(sizeof(int32_t) * (size_t)p.n);
        for (size_t d = 0; d < sizeof density / sizeof density[0]; d++) {
            int64_t ns = 0;
            for (int64_t j = 0; j < p.n; j++)
                if (test_urand(0.0f, 1.0f) < density[d] || density[d] == 1.0)
                    cols[ns++] = (int32_t)j;
            if (ns == 0) cols[ns++] = (int32_t)(p.n - 1); /* one column */
            for (int bits = 8; bits <= 16; bits += 8) {
                void *pk = pack(bits, &p);
                size_t sb = bits == 8 ? kcpu_pack_i8_bytes(p.k, ns) : kcpu_pack_i16_bytes(p.k, ns);
                unsigned char *fast = xalloc(sb), *ref = xalloc(sb);
                memset(fast, 0x5a, sb);
                memset(ref, 0xa5, sb);
                kcpu_pack_select(pk, ns, cols, fast);
                kcpu_pack_select_ref(pk, ns, cols, ref);
                size_t bad = 0;
                for (size_t b = 0; b < sb; b++)
                    bad += fast[b] != ref[b];
                CHECK(bad == 0,
                      "%d-bit ascending select of %lld of %lld columns (k %lld): %zu bytes differ",
                      bits, (long long)ns, (long long)p.n, (long long)p.k, bad);
                cases++;
                mt_aligned_free(fast);
                mt_aligned_free(ref);
                mt_aligned_free(pk);
            }
        }
        mt_aligned_free(cols);
        problem_free(&p);
    }
    fprintf(stderr, "ascending select: %d cases against the column-by-column oracle (%s)\n", cases,
            kcpu_isa_active() >= KCPU_ISA_AVX512 ? "AVX-512 path" : "oracle only: no AVX-512");
}

/* The oracle of intgemm's saturating int8 paths (kcpu.h, "Emulation of
** intgemm's int8 code paths"), written from that description: lane l of a
** register of r bytes sums the pairs at k = c r + 2l, c r + 2l + 1 over the
** chunks c, clamped to int16 after each chunk; the lanes are then added in
** int32.  Positions past k count as zeros. */
static void oracle_sat16(const problem *p, float qb, int r, int32_t *acc) {
    float qa = omult8(p->a, p->m, p->k, p->lda);
    for (int64_t i = 0; i < p->m; i++) {
        for (int64_t j = 0; j < p->n; j++) {
            int64_t total = 0;
            for (int l = 0; l < r / 2; l++) {
                int64_t lane = 0;
                for (int64_t c = 0; c * r < p->k; c++) {
                    for (int64_t k = c * r + 2 * l; k < c * r + 2 * l + 2 && k < p->k; k++) {
                        lane += (int64_t)oq(p->a[i * p->lda + k], qa, -127.0f, 127.0f) *
                                oq(p->b[k * p->n + j], qb, -127.0f, 127.0f);
                    }
                    lane = lane > 32767 ? 32767 : lane < -32768 ? -32768 : lane;
                }
                total += lane;
            }
            acc[i * p->n + j] = (int32_t)total;
        }
    }
}

/* KCPU_IGEMM_SAT16: the oracle's accumulators for registers of 16, 32 and 64
** bytes, on products whose lanes saturate (same-sign extremes, and random
** values whose running sums cross the limit and come back), the exact sums
** where no lane can saturate, int16 unchanged; the dispatcher picks it
** exactly while an emulation is set (kcpu_intgemm_emulate). */
static void test_intgemm_sat16(void) {
    static const int64_t shapes[][3] = {{3, 128, 70}, {5, 200, 9}, {2, 64, 64}, {4, 7, 8}};
    int old = kcpu_intgemm_emulate(0);
    CHECK(kcpu_igemm_active() != KCPU_IGEMM_SAT16, "no emulation: native variant");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        problem p;
        problem_alloc(&p, shapes[s][0], shapes[s][1], shapes[s][2]);
        int64_t mn = p.m * p.n;
        int32_t *want = xalloc((size_t)mn * sizeof(int32_t));
        int32_t *got = xalloc((size_t)mn * sizeof(int32_t));
        for (int fill = 0; fill < 3; fill++) {
            if (fill == 0) {
                fill_const(&p, 2.0f, 0.5f); /* every pair 2 * 127^2 */
            } else {
                for (int64_t i = 0; i < p.m; i++) {
                    for (int64_t k = 0; k < p.k; k++) {
                        /* mostly near +-max: large pairs of both signs */
                        float v = test_urand(0.7f, 1.0f);
                        p.a[i * p.lda + k] = fill == 1 || test_urand(0.0f, 1.0f) < 0.8f ? v : -v;
                    }
                }
                for (int64_t i = 0; i < p.k * p.n; i++) {
                    float v = test_urand(0.7f, 1.0f);
                    p.b[i] = test_urand(0.0f, 1.0f) < (fill == 1 ? 0.5f : 0.8f) ? v : -v;
                }
            }
            void *pk = pack(8, &p);
            kcpu_packed_info info;
            kcpu_packed_get_info(pk, &info);
            int64_t saturated = 0;
            for (int r = 16; r <= 64; r *= 2) {
                oracle_sat16(&p, info.qb, r, want);
                kcpu_intgemm_emulate(r);
                CHECK(kcpu_igemm_active() == KCPU_IGEMM_SAT16, "emulation %d: SAT16 active", r);
                float qa = run_acc(8, KCPU_IGEMM_SAT16, &p, pk, got, p.n);
                CHECK(qa == omult8(p.a, p.m, p.k, p.lda), "sat16 r=%d: qa", r);
                int64_t bad = 0;
                for (int64_t i = 0; i < mn; i++) {
                    bad += got[i] != want[i];
                }
                CHECK(bad == 0, "sat16 r=%d m=%lld k=%lld n=%lld fill %d: %lld accumulators differ",
                      r, (long long)p.m, (long long)p.k, (long long)p.n, fill, (long long)bad);
                /* the dispatching entry takes it too */
                float *c = xalloc((size_t)mn * sizeof(float)),
                      *w = xalloc((size_t)mn * sizeof(float));
                size_t sb = kcpu_gemm_i8_scratch_bytes(p.m, p.k);
                void *scratch = xalloc(sb);
                kcpu_gemm_i8(p.m, p.a, p.lda, pk, p.bias, c, p.n, scratch);
                kcpu_gemm_i8_impl(KCPU_IGEMM_SAT16, p.m, p.a, p.lda, pk, p.bias, w, p.n, scratch);
                CHECK(memcmp(c, w, (size_t)mn * sizeof(float)) == 0, "sat16 r=%d: dispatch", r);
                mt_aligned_free(c), mt_aligned_free(w), mt_aligned_free(scratch);
                int32_t *exact = xalloc((size_t)mn * sizeof(int32_t));
                oracle_acc(8, &p, info.qb, exact);
                for (int64_t i = 0; i < mn; i++) {
                    saturated += exact[i] != want[i];
                }
                /* no lane can pass 32767 when it sums at most one pair */
                if (p.k <= r) {
                    CHECK(memcmp(exact, want, (size_t)mn * sizeof(int32_t)) == 0,
                          "sat16 r=%d k=%lld: one chunk is exact", r, (long long)p.k);
                }
                mt_aligned_free(exact);
            }
            if (p.k > 64 && fill < 2) {
                CHECK(saturated > 0, "k=%lld fill %d: the test saturates no lane", (long long)p.k,
                      fill);
            }
            mt_aligned_free(pk);
        }
        /* int16 products are REF's */
        problem_random(&p);
        void *pk16 = pack(16, &p);
        int32_t *ref = xalloc((size_t)mn * sizeof(int32_t));
        kcpu_intgemm_emulate(16);
        run_acc(16, KCPU_IGEMM_SAT16, &p, pk16, got, p.n);
        run_acc(16, KCPU_IGEMM_REF, &p, pk16, ref, p.n);
        CHECK(memcmp(got, ref, (size_t)mn * sizeof(int32_t)) == 0, "sat16: int16 is REF's");
        mt_aligned_free(ref), mt_aligned_free(pk16);
        mt_aligned_free(want), mt_aligned_free(got);
        problem_free(&p);
    }
    CHECK(kcpu_intgemm_emulate(7) == 16, "emulate returns the old setting");
    CHECK(kcpu_intgemm_emulated() == 0 && kcpu_igemm_active() != KCPU_IGEMM_SAT16,
          "an unknown register size is no emulation");
    kcpu_intgemm_emulate(old);
}

int main(void) {
    test_rng_seed(0x2545f4914f6cdd1dull); /* the seed the expected values were drawn with */
    kcpu_intgemm_emulate(0);              /* INTGEMM_CPUID in the environment must not apply */
    test_quantizers();
    test_pack();
    test_dispatch();
    test_extremes();
    test_shapes();
    test_empty_k();
    test_select();
    test_relu();
    test_argmax();
    test_topk_blocks();
    test_res();
    test_prepared();
    test_max();
    test_select_ascending(); /* the earlier tests' draws stay */
    test_intgemm_sat16();
    TEST_MAIN_END();
}
