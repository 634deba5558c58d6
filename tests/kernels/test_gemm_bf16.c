/*
** test_gemm_bf16.c: the bfloat16 GEMM of mixed-precision training
** (kcpu_gemm_bf16) against the double-precision oracle
** kcpu_gemm_bf16_ref, every tile kernel: scalar in the plain run, AVX2 and
** AVX-512 BF16 (with its packing) as the parts test_gemm_bf16.avx2 and
** test_gemm_bf16.avx512_bf16, skipped on a CPU without them.
**
**  - small integers (exact in bfloat16, every product and partial sum exact
**    in float32): the result must equal the oracle bit for bit;
**  - random values: |C - oracle| <= (k + 4) u (|alpha| sum |a b| + |beta c0|)
**    with u = 2^-24, the bound of k float32 additions of exact products and
**    the block-wise accumulation into C (rounding the inputs to bfloat16 is
**    part of the oracle, so an fp32 product would fail it: its difference is
**    about 2^-9 relative);
**  - shapes: odd m, n, k, k = 1, several k blocks (k > KC), several column
**    blocks (n > NC), several row blocks (m > MC), all four transposes,
**    leading dimensions above the minimum, beta 0 with NaN in C (C must not
**    be read), beta 0.5, alpha -0.75;
**  - the AVX-512 BF16 packing against the scalar packing, bit for bit, on
**    floats with ties, subnormals, NaN, infinities and signed zeros.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kcpu_impl.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct shape {
    int64_t m, n, k;
} shape;

static void run_case(kcpu_gemm_bf16_impl impl, shape s, bool ta, bool tb, bool ints, float alpha,
                     float beta, void *scratch) {
    int64_t m = s.m, n = s.n, k = s.k;
    int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 7;
    int64_t ra = ta ? k : m, rb = tb ? n : k;
    float *a = malloc((size_t)(ra * lda) * sizeof *a), *b = malloc((size_t)(rb * ldb) * sizeof *b);
    float *c = malloc((size_t)(m * ldc) * sizeof *c), *c0 = malloc((size_t)(m * ldc) * sizeof *c);
    float *want = malloc((size_t)(m * ldc) * sizeof *c);
    if (!a || !b || !c || !c0 || !want) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < ra * lda; i++)
        a[i] = ints ? (float)((int)(urand() * 9) - 4) : (float)(urand() * 2 - 1);
    for (int64_t i = 0; i < rb * ldb; i++)
        b[i] = ints ? (float)((int)(urand() * 9) - 4) : (float)(urand() * 2 - 1);
    for (int64_t i = 0; i < m * ldc; i++)
        c0[i] = beta != 0.0f ? (ints ? (float)((int)(urand() * 9) - 4) : (float)urand()) : NAN;
    memcpy(c, c0, (size_t)(m * ldc) * sizeof *c);
    memcpy(want, c0, (size_t)(m * ldc) * sizeof *c);
    kcpu_gemm_bf16_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
    kcpu_gemm_bf16_impl_run(impl, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, scratch);
    int64_t bad = 0;
    for (int64_t i = 0; i < m && bad < 3; i++) {
        for (int64_t j = 0; j < n; j++) {
            double mag = 0;
            for (int64_t p = 0; p < k; p++) {
                float x = ta ? a[p * lda + i] : a[i * lda + p];
                float y = tb ? b[j * ldb + p] : b[p * ldb + j];
                mag +=
                    fabs((double)kcpu_bf16_val(kcpu_bf16_of(x)) * kcpu_bf16_val(kcpu_bf16_of(y)));
            }
            double old = beta != 0.0f ? fabs((double)beta * c0[i * ldc + j]) : 0.0;
            double bound = ints ? 0.0 : (double)(k + 4) * 0x1p-24 * (fabs(alpha) * mag + old);
            double got = c[i * ldc + j], w = want[i * ldc + j], err = fabs(got - w);
            if (!(err <= bound)) {
                if (bad++ < 3)
                    CHECK(0,
                          "%s %s%s m%lld n%lld k%lld%s: C[%lld,%lld] = %.9g, oracle %.9g (bound "
                          "%.3g)",
                          kcpu_gemm_bf16_name(impl), ta ? "A^T " : "", tb ? "B^T " : "",
                          (long long)m, (long long)n, (long long)k, ints ? " ints" : "",
                          (long long)i, (long long)j, got, w, bound);
            }
        }
        /* the padding between rows of C is never written */
        for (int64_t j = n; j < ldc && i < m; j++) {
            float x = c[i * ldc + j], y = c0[i * ldc + j];
            if (!(memcmp(&x, &y, sizeof x) == 0) && bad++ < 3) CHECK(0, "C's padding written");
        }
    }
    CHECK(bad == 0, "%s: %lld mismatches", kcpu_gemm_bf16_name(impl), (long long)bad);
done:
    free(a);
    free(b);
    free(c);
    free(c0);
    free(want);
}

/* A float with awkward bits: a tie of bfloat16 rounding, a subnormal, a
** NaN, an infinity, a signed zero, or a plain random value. */
static float awkward(void) {
    uint32_t u = (uint32_t)(urand() * 4294967296.0);
    switch ((int)(urand() * 8)) {
    case 0: u = (u & 0xffff0000u) | 0x8000u; break; /* tie */
    case 1: u &= 0x807fffffu; break;                /* subnormal or zero */
    case 2: u |= 0x7f800001u; break;                /* NaN */
    case 3: u = (u & 0x80000000u) | 0x7f800000u; break;
    case 4: u &= 0x80000000u; break;
    default: break;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The AVX-512 BF16 packing primitives against the scalar ones, bit for bit:
** runs along k (1..16 of them, odd and even lengths, strides 12 and 32) and
** pairs of rows across k (with and without the odd row). */
static void test_packers(void) {
    if (!kcpu_gemm_bf16_available(KCPU_BF16_AVX512)) {
        SKIP("AVX-512 BF16 packing (not on this CPU or ISA capped)");
        return;
    }
    enum { LD = 80, NX = 16 * LD };
    float x[NX];
    uint32_t a[70 * 32], b[70 * 32];
    int bad = 0, runs = 0;
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < NX; i++)
            x[i] = awkward();
        int lines = 1 + trial % 16, kc = 1 + (int)(urand() * 70), stride = trial & 1 ? 32 : 12;
        if (lines > stride) lines = stride;
        memset(a, 0xa5, sizeof a);
        memset(b, 0xa5, sizeof b);
        kcpu_bf16_packer_scalar.along_k(x, LD, lines, kc, a, stride);
        kcpu_bf16_packer_avx512.along_k(x, LD, lines, kc, b, stride);
        bad += memcmp(a, b, sizeof a) != 0;
        int n = 1 + (int)(urand() * 40);
        bool odd = trial % 3 == 0;
        kcpu_bf16_packer_scalar.across_k(x, odd ? NULL : x + LD, n, a);
        kcpu_bf16_packer_avx512.across_k(x, odd ? NULL : x + LD, n, b);
        bad += memcmp(a, b, sizeof a) != 0;
        runs += 2;
    }
    CHECK(bad == 0, "AVX-512 packing differs from the scalar packing in %d of %d cases", bad, runs);
    printf("packing: AVX-512 BF16 units equal the scalar ones in %d cases (ties, subnormals, "
           "NaN, inf)\n",
           runs - bad);
}

/* One tile kernel on every shape and transpose. */
static void test_impl(kcpu_gemm_bf16_impl impl, void *scratch) {
    if (!kcpu_gemm_bf16_available(impl)) {
        SKIP("%s tile kernel (not on this CPU or ISA capped)", kcpu_gemm_bf16_name(impl));
        return;
    }
    const shape shapes[] = {{1, 1, 1},     {5, 7, 3},      {12, 32, 2},
                            {13, 33, 17},  {37, 70, 256},  {50, 40, 601},
                            {300, 45, 64}, {20, 1100, 96}, {145, 129, 513}};
    const int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    int before = th_failures;
    for (int si = 0; si < n_shapes; si++) {
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            run_case(impl, shapes[si], ta, tb, true, 1.0f, 0.0f, scratch);
            run_case(impl, shapes[si], ta, tb, false, 1.0f, 0.0f, scratch);
            run_case(impl, shapes[si], ta, tb, false, -0.75f, 0.5f, scratch);
        }
        run_case(impl, shapes[si], false, false, true, 2.0f, 1.0f, scratch);
    }
    printf("%s: %d shapes x 4 transposes, %s\n", kcpu_gemm_bf16_name(impl), n_shapes,
           th_failures == before ? "all within the bound (integers exact)" : "FAILED");
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    void *scratch = aligned_alloc(64, KCPU_GEMM_BF16_SCRATCH);
    if (!scratch) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (TEST_PART("avx2")) {
        test_impl(KCPU_BF16_AVX2, scratch);
        free(scratch);
        TEST_MAIN_END();
    }
    if (TEST_PART("avx512_bf16")) {
        test_packers();
        test_impl(KCPU_BF16_AVX512, scratch);
        free(scratch);
        TEST_MAIN_END();
    }
    test_impl(KCPU_BF16_SCALAR, scratch);
    /* the dispatching entry takes the best kernel: same bits as that kernel */
    shape s = {29, 77, 300};
    float *a = malloc(29 * 300 * sizeof *a), *b = malloc(300 * 77 * sizeof *b);
    float *c1 = calloc(29 * 77, sizeof *c1), *c2 = calloc(29 * 77, sizeof *c2);
    if (a && b && c1 && c2) {
        for (int i = 0; i < 29 * 300; i++)
            a[i] = (float)(urand() - 0.5);
        for (int i = 0; i < 300 * 77; i++)
            b[i] = (float)(urand() - 0.5);
        kcpu_gemm_bf16(false, false, s.m, s.n, s.k, 1.0f, a, s.k, b, s.n, 0.0f, c1, s.n, scratch);
        kcpu_gemm_bf16_impl_run(kcpu_gemm_bf16_best(), false, false, s.m, s.n, s.k, 1.0f, a, s.k, b,
                                s.n, 0.0f, c2, s.n, scratch);
        CHECK(memcmp(c1, c2, 29 * 77 * sizeof *c1) == 0, "kcpu_gemm_bf16 is not %s's result",
              kcpu_gemm_bf16_name(kcpu_gemm_bf16_best()));
    }
    free(a);
    free(b);
    free(c1);
    free(c2);
    free(scratch);
    TEST_MAIN_END();
}
