/*
** convert.c: IEEE binary16 <-> binary32 arrays.  The scalar reference
** rounds to nearest even, handles subnormals, infinities and NaN (kept
** quiet with its top payload bits, as the F16C instructions do), so that it
** matches the F16C variant (convert_avx2.c) bit for bit.
*/
#include "kcpu_impl.h"

#include <string.h>

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_f16_one(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) { /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    }
    if (u >= 0x477ff000u) { /* >= 65520 rounds to infinity; infinity */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (u >= 0x38800000u) { /* normal binary16 (>= 2^-14) */
        uint32_t r = u - 0x38000000u;
        r = (r + 0x0fffu + ((r >> 13) & 1u)) >> 13;
        return (uint16_t)(sign | r);
    }
    if (u <= 0x33000000u) { /* <= 2^-25: rounds to (signed) zero */
        return sign;
    }
    uint32_t e = u >> 23, mant = (u & 0x7fffffu) | 0x800000u;
    uint32_t s = 126u - e; /* 14..23 */
    uint32_t h = mant >> s, rem = mant & ((1u << s) - 1u), half = 1u << (s - 1u);
    if (rem > half || (rem == half && (h & 1u))) {
        h++;
    }
    return (uint16_t)(sign | h);
}

static float f16_to_f32_one(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return bits_f32(sign | f32_bits(v));
    }
    if (e == 31) {
        return bits_f32(sign | (m ? 0x7fc00000u | (m << 13) : 0x7f800000u));
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

void kcpu_f16_to_f32_ref(int64_t n, const uint16_t *x, float *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = f16_to_f32_one(x[i]);
    }
}

void kcpu_f32_to_f16_ref(int64_t n, const float *x, uint16_t *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = f32_to_f16_one(x[i]);
    }
}

void kcpu_f16_to_f32(int64_t n, const uint16_t *x, float *y) {
    if (kcpu_isa_active() >= KCPU_ISA_AVX2) {
        kcpu_f16_to_f32_avx2(n, x, y);
        return;
    }
    kcpu_f16_to_f32_ref(n, x, y);
}

void kcpu_f32_to_f16(int64_t n, const float *x, uint16_t *y) {
    if (kcpu_isa_active() >= KCPU_ISA_AVX2) {
        kcpu_f32_to_f16_avx2(n, x, y);
        return;
    }
    kcpu_f32_to_f16_ref(n, x, y);
}

void kcpu_bf16_to_f32(int64_t n, const uint16_t *x, float *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = kcpu_bf16_val(x[i]);
    }
}

void kcpu_f32_to_bf16_ref(int64_t n, const float *x, uint16_t *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = kcpu_bf16_of(x[i]);
    }
}

void kcpu_f32_to_bf16(int64_t n, const float *x, uint16_t *y) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_f32_to_bf16_avx512(n, x, y);
        return;
    }
#endif
    kcpu_f32_to_bf16_ref(n, x, y);
}

void kcpu_f32_to_bf16_pairs(int64_t rows, int64_t len, const float *x, uint32_t *y) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_f32_to_bf16_pairs_avx512(rows, len, x, y);
        return;
    }
#endif
    for (int64_t r = 0; r < rows; r++) {
        const float *e = x + 2 * r * len, *o = e + len;
        for (int64_t i = 0; i < len; i++) {
            y[r * len + i] = (uint32_t)kcpu_bf16_of(e[i]) | (uint32_t)kcpu_bf16_of(o[i]) << 16;
        }
    }
}
