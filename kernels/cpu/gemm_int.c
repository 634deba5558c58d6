/*
** gemm_int.c: int8 / int16 GEMM for CPU inference: quantizers, the packer
** of B (once per weight), the portable reference (the test oracle of the
** AVX2 and AVX-512 VNNI variants), the emulation of intgemm's saturating
** int8 paths (SAT16), the variant dispatch and the VNNI peak probe driver.
** The scheme, the packed layout (byte table) and the error bound are
** documented in kcpu.h, section "integer GEMM".
**
** The reference reads the packed panels directly, so it also checks the
** layout the fast variants rely on; tests compare all three with int64 dot
** products of independently quantized, unpacked matrices.
*/
#include "kcpu_impl.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { HDR_BYTES = 64, NC = KCPU_IGEMM_NC };

static const char magic8[4] = {'K', 'Q', '0', '8'};
static const char magic16[4] = {'K', 'Q', '1', '6'};

typedef struct pack_hdr {
    char magic[4];
    uint32_t bits;
    int64_t k, n, kp, np;
    float qb;
    uint8_t zero[20];
} pack_hdr;

_Static_assert(sizeof(pack_hdr) == HDR_BYTES, "packed header is 64 bytes");

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* ------------------------------------------------------------- quantizers */

float kcpu_i8_mult(float maxabs) {
    if (!(maxabs > 0.0f)) {
        return 1.0f;
    }
    float q = 127.0f / maxabs;
    return q <= FLT_MAX ? q : 1.0f;
}

float kcpu_maxabs_f32(int64_t rows, int64_t cols, const float *x, int64_t ld) {
    float m = 0.0f;
    for (int64_t i = 0; i < rows; i++) {
        const float *xi = x + i * ld;
        for (int64_t j = 0; j < cols; j++) {
            float v = fabsf(xi[j]);
            m = v > m ? v : m; /* NaN compares false: skipped */
        }
    }
    return m;
}

/* clamp in float first (NaN goes to lo, as fmaxf(NaN, lo) and vmaxps(v, lo)
** do), then round half to even (the default rounding mode, as vcvtps2dq):
** for |v| < 2^22 adding and subtracting 1.5 * 2^23 rounds in that mode, as
** nearbyintf would, without a library call per element. */
static inline float quant_clamp(float v, float lo, float hi) {
    v = v >= lo ? v : lo;
    return v <= hi ? v : hi;
}

static inline float round_even(float v) {
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    return (v + magic) - magic;
}

static inline int8_t quant8(float x, float mult) {
    return (int8_t)round_even(quant_clamp(x * mult, -127.0f, 127.0f));
}

static inline int16_t quant16(float x, float mult) {
    return (int16_t)round_even(quant_clamp(x * mult, -32768.0f, 32767.0f));
}

void kcpu_quantize_i8(int64_t n, const float *x, float mult, int8_t *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = quant8(x[i], mult);
    }
}

void kcpu_quantize_i16(int64_t n, const float *x, float mult, int16_t *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = quant16(x[i], mult);
    }
}

/* As Marian (intgemm_interface.h, affineOrDotTyped): 1.0f / (qa * qb), the
** product rounded to float before the division, so that dequantized values
** match Marian's intgemm models bit for bit. */
float kcpu_igemm_unquant(float qa, float qb) {
    float prod = qa * qb;
    return 1.0f / prod;
}

/* ---------------------------------------------------------------- packing */

static int64_t kp_of(int bits, int64_t k) { return round_up(k, bits == 8 ? 4 : 2); }

static size_t pack_bytes(int bits, int64_t k, int64_t n) {
    int64_t kp = kp_of(bits, k), np = round_up(n, NC);
    size_t corr = bits == 8 ? (size_t)np * 4 : 0;
    return HDR_BYTES + corr + (size_t)kp * (size_t)np * (size_t)(bits / 8);
}

size_t kcpu_pack_i8_bytes(int64_t k, int64_t n) { return pack_bytes(8, k, n); }

size_t kcpu_pack_i16_bytes(int64_t k, int64_t n) { return pack_bytes(16, k, n); }

/* Element index of B(k, j) inside the panels (in elements, not bytes). */
static size_t panel_index(int bits, int64_t kp, int64_t k, int64_t j) {
    int64_t g = bits == 8 ? 4 : 2;
    return (size_t)((j / NC) * kp * NC + (k / g) * NC * g + (j % NC) * g + k % g);
}

/* The header of a packed B (the body untouched). */
static pack_hdr *hdr_set(int bits, int64_t k, int64_t n, float qb, void *packed) {
    pack_hdr *h = packed;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, bits == 8 ? magic8 : magic16, 4);
    h->bits = (uint32_t)bits;
    h->k = k;
    h->n = n;
    h->kp = kp_of(bits, k);
    h->np = round_up(n, NC);
    h->qb = qb;
    return h;
}

/* The header, and a body of zeros. */
static pack_hdr *hdr_init(int bits, int64_t k, int64_t n, float qb, void *packed) {
    pack_hdr *h = hdr_set(bits, k, n, qb, packed);
    size_t body = pack_bytes(bits, k, n) - HDR_BYTES;
    memset((char *)packed + HDR_BYTES, 0, body);
    return h;
}

static int32_t *hdr_corr(const pack_hdr *h) { return (int32_t *)((char *)h + HDR_BYTES); }

static void *hdr_panels(const pack_hdr *h) {
    return (char *)h + HDR_BYTES + (h->bits == 8 ? (size_t)h->np * 4 : 0);
}

/* corr[j] = -128 * sum_k Bq[k, j] (int8), from the panels in memory order
** (the padding k's and columns are zero). */
static void pack_corr(pack_hdr *h) {
    const int8_t *p = hdr_panels(h);
    int32_t *corr = hdr_corr(h);
    for (int64_t j0 = 0; j0 < h->n; j0 += NC) {
        const int8_t *panel = p + j0 * h->kp;
        int32_t s[NC] = {0};
        for (int64_t u = 0; u < h->kp / 4; u++) {
            const int8_t *unit = panel + u * NC * 4;
            for (int c = 0; c < NC; c++) {
                s[c] += unit[4 * c] + unit[4 * c + 1] + unit[4 * c + 2] + unit[4 * c + 3];
            }
        }
        for (int64_t c = 0; c < NC && j0 + c < h->n; c++) {
            corr[j0 + c] = (int32_t)((uint32_t)s[c] * (uint32_t)-128); /* wraps like the kernels */
        }
    }
}

int64_t kcpu_pack_i8_q(int64_t k, int64_t n, const int8_t *bq, int64_t ldb, bool trans, float qb,
                       void *packed) {
    pack_hdr *h = hdr_init(8, k, n, qb, packed);
    int8_t *p = hdr_panels(h);
    int64_t clamped = 0;
    for (int64_t kk = 0; kk < k; kk++) {
        for (int64_t j = 0; j < n; j++) {
            int8_t v = trans ? bq[j * ldb + kk] : bq[kk * ldb + j];
            if (v == INT8_MIN) {
                v = -127;
                clamped++;
            }
            p[panel_index(8, h->kp, kk, j)] = v;
        }
    }
    pack_corr(h);
    return clamped;
}

void kcpu_pack_i16_q(int64_t k, int64_t n, const int16_t *bq, int64_t ldb, bool trans, float qb,
                     void *packed) {
    pack_hdr *h = hdr_init(16, k, n, qb, packed);
    int16_t *p = hdr_panels(h);
    for (int64_t kk = 0; kk < k; kk++) {
        for (int64_t j = 0; j < n; j++) {
            p[panel_index(16, h->kp, kk, j)] = trans ? bq[j * ldb + kk] : bq[kk * ldb + j];
        }
    }
}

/* B read in memory order: rows of B for plain, rows of B^T (the columns of
** B) for trans; the panel writes stay inside one panel either way. */
void kcpu_pack_i8_ex(int64_t k, int64_t n, const float *b, int64_t ldb, bool trans, void *packed) {
    float qb = kcpu_i8_mult(trans ? kcpu_maxabs_f32(n, k, b, ldb) : kcpu_maxabs_f32(k, n, b, ldb));
    pack_hdr *h = hdr_init(8, k, n, qb, packed);
    int8_t *p = hdr_panels(h);
    for (int64_t r = 0; r < (trans ? n : k); r++) {
        const float *br = b + r * ldb;
        for (int64_t c = 0; c < (trans ? k : n); c++) {
            int64_t kk = trans ? c : r, j = trans ? r : c;
            p[panel_index(8, h->kp, kk, j)] = quant8(br[c], qb);
        }
    }
    pack_corr(h);
}

void kcpu_pack_i16_ex(int64_t k, int64_t n, const float *b, int64_t ldb, bool trans,
                      void *packed) {
    pack_hdr *h = hdr_init(16, k, n, KCPU_I16_MULT, packed);
    int16_t *p = hdr_panels(h);
    for (int64_t r = 0; r < (trans ? n : k); r++) {
        const float *br = b + r * ldb;
        for (int64_t c = 0; c < (trans ? k : n); c++) {
            int64_t kk = trans ? c : r, j = trans ? r : c;
            p[panel_index(16, h->kp, kk, j)] = quant16(br[c], KCPU_I16_MULT);
        }
    }
}

void kcpu_pack_i8(int64_t k, int64_t n, const float *b, int64_t ldb, void *packed) {
    kcpu_pack_i8_ex(k, n, b, ldb, false, packed);
}

void kcpu_pack_i16(int64_t k, int64_t n, const float *b, int64_t ldb, void *packed) {
    kcpu_pack_i16_ex(k, n, b, ldb, false, packed);
}

/* A group of G k's of one column is one 4-byte unit (4 x int8, 2 x int16):
** units per column, and the bytes of a panel of NC columns. */
static int64_t col_units(const pack_hdr *h) { return h->kp * (int64_t)h->bits / 32; }
static size_t panel_bytes(const pack_hdr *h) { return (size_t)col_units(h) * NC * 4; }

/* One 4-byte unit per selected column, column by column; every ISA, any
** order and repeats. */
static void select_units(const pack_hdr *h, int64_t n_sel, const int32_t *cols, pack_hdr *o) {
    const char *src = hdr_panels(h);
    char *dst = hdr_panels(o);
    int64_t units = col_units(h);
    size_t panel = panel_bytes(h), stride = (size_t)NC * 4;
    for (int64_t jo = 0; jo < n_sel; jo++) {
        int64_t j = cols[jo];
        const char *sp = src + (size_t)(j / NC) * panel + (size_t)(j % NC) * 4;
        char *dp = dst + (size_t)(jo / NC) * panel + (size_t)(jo % NC) * 4;
        for (int64_t u = 0; u < units; u++)
            memcpy(dp + (size_t)u * stride, sp + (size_t)u * stride, 4);
    }
}

static void select_corr(const pack_hdr *h, int64_t n_sel, const int32_t *cols, pack_hdr *o) {
    if (h->bits == 8) {
        const int32_t *ci = hdr_corr(h);
        int32_t *co = hdr_corr(o);
        for (int64_t jo = 0; jo < n_sel; jo++)
            co[jo] = ci[cols[jo]];
    }
}

void kcpu_pack_select_ref(const void *packed, int64_t n_sel, const int32_t *cols, void *out) {
    const pack_hdr *h = packed;
    pack_hdr *o = hdr_init((int)h->bits, h->k, n_sel, h->qb, out);
    select_units(h, n_sel, cols, o);
    select_corr(h, n_sel, cols, o);
}

#ifdef MT_HAVE_AVX512_BUILD
/* Columns in strictly increasing order: a shortlist (sorted, no repeats). */
static bool ascending(int64_t n, const int32_t *cols) {
    for (int64_t j = 1; j < n; j++) {
        if (cols[j] <= cols[j - 1]) return false;
    }
    return true;
}
#endif

/* Ascending columns with AVX-512: each source panel's selected columns are
** one run of output columns, moved a k group at a time by compressing the
** panel's rows (kcpu_select_units_avx512); only what no run writes is
** zeroed first (the corrections' padding, the last panel).  A shortlist is
** selected once per batch from a cold pack (the 8000 x 256 output layer, 2
** MB): column by column, each 4-byte unit was a scattered load. */
void kcpu_pack_select(const void *packed, int64_t n_sel, const int32_t *cols, void *out) {
#ifdef MT_HAVE_AVX512_BUILD
    const pack_hdr *h = packed;
    if (kcpu_isa_active() < KCPU_ISA_AVX512 || !ascending(n_sel, cols)) {
        kcpu_pack_select_ref(packed, n_sel, cols, out);
        return;
    }
    pack_hdr *o = hdr_set((int)h->bits, h->k, n_sel, h->qb, out);
    size_t panel = panel_bytes(h);
    char *dst = hdr_panels(o);
    if (h->bits == 8) memset(hdr_corr(o), 0, (size_t)o->np * 4);
    memset(dst + (size_t)(o->np / NC - 1) * panel, 0, panel);
    kcpu_select_units_avx512(hdr_panels(h), dst, panel, col_units(h), n_sel, cols);
    select_corr(h, n_sel, cols, o);
#else
    kcpu_pack_select_ref(packed, n_sel, cols, out);
#endif
}

bool kcpu_packed_get_info(const void *packed, kcpu_packed_info *info) {
    const pack_hdr *h = packed;
    int bits = memcmp(h->magic, magic8, 4) == 0 ? 8 : memcmp(h->magic, magic16, 4) == 0 ? 16 : 0;
    if (bits == 0 || h->bits != (uint32_t)bits || h->k < 0 || h->n < 1 ||
        h->kp != kp_of(bits, h->k) || h->np != round_up(h->n, NC)) {
        return false;
    }
    info->bits = bits;
    info->k = h->k;
    info->n = h->n;
    info->kp = h->kp;
    info->np = h->np;
    info->qb = h->qb;
    info->bytes = pack_bytes(bits, h->k, h->n);
    return true;
}

void kcpu_unpack_i8(const void *packed, int8_t *bq) {
    const pack_hdr *h = packed;
    const int8_t *p = hdr_panels(h);
    for (int64_t kk = 0; kk < h->k; kk++) {
        for (int64_t j = 0; j < h->n; j++) {
            bq[kk * h->n + j] = p[panel_index(8, h->kp, kk, j)];
        }
    }
}

void kcpu_unpack_i16(const void *packed, int16_t *bq) {
    const pack_hdr *h = packed;
    const int16_t *p = hdr_panels(h);
    for (int64_t kk = 0; kk < h->k; kk++) {
        for (int64_t j = 0; j < h->n; j++) {
            bq[kk * h->n + j] = p[panel_index(16, h->kp, kk, j)];
        }
    }
}

/* ------------------------------------------------------------- reference */

static int64_t scratch_row(int bits, int64_t k) {
    return round_up(kp_of(bits, k) * (bits / 8), 64);
}

size_t kcpu_gemm_i8_scratch_bytes(int64_t m, int64_t k) {
    return (size_t)(2 * m * scratch_row(8, k)) + 64;
}

size_t kcpu_gemm_i16_scratch_bytes(int64_t m, int64_t k) {
    return (size_t)(m * scratch_row(16, k)) + 64;
}

static void ref_store(kcpu_igemm_job *j, int64_t i, int64_t col, uint32_t acc, float unq) {
    int32_t v = (int32_t)acc; /* modulo 2^32, as the SIMD adds */
    if (j->c) {
        float r = (float)v * unq;
        r = j->bias ? r + j->bias[col] : r;
        r = j->res ? r + j->res[i * j->ldr + col] : r;
        j->c[i * j->ldc + col] = j->relu && !(r > 0.0f) ? 0.0f : r;
    } else {
        j->acc[i * j->ldacc + col] = v;
    }
}

/* int8 products on the REF layout: exact (lane_bytes 0), or as intgemm's
** saturating paths with registers of lane_bytes bytes (kcpu.h, "Emulation
** of intgemm's int8 code paths"). */
static void ref_i8_lanes(kcpu_igemm_job *j, int lane_bytes) {
    if (j->phase != KCPU_IGEMM_PRODUCT) {
        j->qa =
            kcpu_i8_mult(j->a_max_known ? j->a_maxabs : kcpu_maxabs_f32(j->m, j->k, j->a, j->lda));
        for (int64_t i = 0; i < j->m; i++) {
            kcpu_quantize_i8(j->k, j->a + i * j->lda, j->qa, (int8_t *)j->scratch + i * j->sa);
        }
    }
    if (j->phase == KCPU_IGEMM_QUANT) {
        return;
    }
    float unq = kcpu_igemm_unquant(j->qa, j->qb);
    const int8_t *p = j->panels;
    for (int64_t i = 0; i < j->m; i++) {
        const int8_t *ai = (const int8_t *)j->scratch + i * j->sa;
        for (int64_t col = 0; col < j->n; col++) {
            uint32_t s = 0;
            if (lane_bytes == 0) {
                for (int64_t kk = 0; kk < j->k; kk++) {
                    s += (uint32_t)(ai[kk] * p[panel_index(8, j->kp, kk, col)]);
                }
            } else {
                /* positions past k are zeros: they add 0 to their lane */
                for (int64_t l = 0; 2 * l < lane_bytes; l++) {
                    int32_t lane = 0;
                    for (int64_t k0 = 2 * l; k0 < j->k; k0 += lane_bytes) {
                        int32_t pair = ai[k0] * p[panel_index(8, j->kp, k0, col)];
                        if (k0 + 1 < j->k) {
                            pair += ai[k0 + 1] * p[panel_index(8, j->kp, k0 + 1, col)];
                        }
                        lane += pair;
                        lane = lane > INT16_MAX ? INT16_MAX : lane < INT16_MIN ? INT16_MIN : lane;
                    }
                    s += (uint32_t)lane;
                }
            }
            ref_store(j, i, col, s, unq);
        }
    }
}

static void ref_i8(kcpu_igemm_job *j) { ref_i8_lanes(j, 0); }

static void ref_i16(kcpu_igemm_job *j) {
    if (j->phase != KCPU_IGEMM_PRODUCT) {
        j->qa = KCPU_I16_MULT;
        for (int64_t i = 0; i < j->m; i++) {
            kcpu_quantize_i16(j->k, j->a + i * j->lda, j->qa,
                              (int16_t *)((char *)j->scratch + i * j->sa));
        }
    }
    if (j->phase == KCPU_IGEMM_QUANT) {
        return;
    }
    float unq = kcpu_igemm_unquant(j->qa, j->qb);
    const int16_t *p = j->panels;
    for (int64_t i = 0; i < j->m; i++) {
        const int16_t *ai = (const int16_t *)((const char *)j->scratch + i * j->sa);
        for (int64_t col = 0; col < j->n; col++) {
            uint32_t s = 0;
            for (int64_t kk = 0; kk < j->k; kk++) {
                /* int16 x int16 fits int32 except (-2^15)^2 = 2^30: still fits */
                s += (uint32_t)((int32_t)ai[kk] * (int32_t)p[panel_index(16, j->kp, kk, col)]);
            }
            ref_store(j, i, col, s, unq);
        }
    }
}

/* --------------------------------------------------------------- dispatch */

/* intgemm's register bytes emulated (kcpu_intgemm_emulated); -1: not read yet */
static atomic_int intgemm_lanes = -1;

static int intgemm_from_env(void) {
    const char *e = getenv("INTGEMM_CPUID");
    if (e == NULL) {
        return 0;
    }
    if (strcasecmp(e, "SSSE3") == 0) {
        return 16;
    }
    if (strcasecmp(e, "AVX2") == 0) {
        return 32;
    }
    if (strcasecmp(e, "AVX512BW") == 0) {
        return 64;
    }
    return 0;
}

int kcpu_intgemm_emulated(void) {
    int v = atomic_load_explicit(&intgemm_lanes, memory_order_relaxed);
    if (v < 0) {
        int want = intgemm_from_env(), unset = -1;
        atomic_compare_exchange_strong(&intgemm_lanes, &unset, want);
        v = atomic_load_explicit(&intgemm_lanes, memory_order_relaxed);
    }
    return v;
}

int kcpu_intgemm_emulate(int reg_bytes) {
    int old = kcpu_intgemm_emulated();
    atomic_store(&intgemm_lanes,
                 reg_bytes == 16 || reg_bytes == 32 || reg_bytes == 64 ? reg_bytes : 0);
    return old;
}

bool kcpu_igemm_available(kcpu_igemm_impl impl) {
    switch (impl) {
    case KCPU_IGEMM_REF: return true;
    case KCPU_IGEMM_SAT16: return true;
    case KCPU_IGEMM_AVX2: return kcpu_isa_detect() >= KCPU_ISA_AVX2;
    case KCPU_IGEMM_VNNI:
#ifdef MT_HAVE_AVX512_BUILD
        return kcpu_isa_detect() >= KCPU_ISA_AVX512 && kcpu_cpu_has_avx512_vnni();
#else
        return false;
#endif
    default: return false;
    }
}

kcpu_igemm_impl kcpu_igemm_active(void) {
    if (kcpu_intgemm_emulated() != 0) {
        return KCPU_IGEMM_SAT16;
    }
    kcpu_isa isa = kcpu_isa_active();
    if (isa >= KCPU_ISA_AVX512 && kcpu_igemm_available(KCPU_IGEMM_VNNI)) {
        return KCPU_IGEMM_VNNI;
    }
    return isa >= KCPU_ISA_AVX2 ? KCPU_IGEMM_AVX2 : KCPU_IGEMM_REF;
}

const char *kcpu_igemm_name(kcpu_igemm_impl impl) {
    switch (impl) {
    case KCPU_IGEMM_REF: return "ref";
    case KCPU_IGEMM_AVX2: return "avx2";
    case KCPU_IGEMM_VNNI: return "avx512vnni";
    case KCPU_IGEMM_SAT16:
        switch (kcpu_intgemm_emulated()) {
        case 16: return "intgemm-ssse3 (emulated)";
        case 32: return "intgemm-avx2 (emulated)";
        case 64: return "intgemm-avx512bw (emulated)";
        default: return "intgemm (emulated)";
        }
    default: return "?";
    }
}

/* What some entries add to a call (NULL: none): the argmax epilogue's state
** and skip row (kcpu_gemm_int_argmax), a residual added after the bias
** (kcpu_gemm_int_res), the product half on a prepared scratch with its qa
** (kcpu_gemm_int_prepared), max|A| given and max|C| measured
** (kcpu_gemm_int_max). */
typedef struct run_extra {
    float *am_val;
    int32_t *am_idx;
    const float *skip;
    const float *res;
    int64_t ldr;
    int phase; /* KCPU_IGEMM_PRODUCT: A already in the scratch, with qa */
    float qa;
    bool a_max_known;
    float a_maxabs;
    float *c_maxabs;
    int64_t col0, ncols; /* ncols > 0: only B's columns col0 .. col0 + ncols
                            (col0 a multiple of NC), C's from c */
} run_extra;

static void run_job(int bits, kcpu_igemm_impl impl, kcpu_igemm_job *jp);

/* Fills the job from the packed header and runs the variant; returns qa. */
static float run_ex(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                    const void *packed_b, const float *bias, bool relu, float *c, int64_t ldc,
                    int32_t *acc, int64_t ldacc, void *scratch, const run_extra *x) {
    const pack_hdr *h = packed_b;
    uintptr_t s = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
    kcpu_igemm_job j = {
        .m = m,
        .k = h->k,
        .n = h->n,
        .kp = h->kp,
        .np = h->np,
        .a = a,
        .lda = lda,
        .panels = hdr_panels(h),
        .corr = bits == 8 ? hdr_corr(h) : NULL,
        .qb = h->qb,
        .scratch = (void *)s,
        .sa = scratch_row(bits, h->k),
        .bias = bias,
        .c = c,
        .ldc = ldc,
        .acc = acc,
        .ldacc = ldacc,
        .qa = bits == 8 ? 1.0f : KCPU_I16_MULT,
        .relu = relu,
        .am_val = x ? x->am_val : NULL,
        .am_idx = x ? x->am_idx : NULL,
        .skip = x ? x->skip : NULL,
        .res = x ? x->res : NULL,
        .ldr = x ? x->ldr : 0,
        .phase = x ? x->phase : KCPU_IGEMM_BOTH,
        .a_max_known = x ? x->a_max_known : false,
        .a_maxabs = x ? x->a_maxabs : 0.0f,
        .c_maxabs = x ? x->c_maxabs : NULL,
    };
    if (j.phase == KCPU_IGEMM_PRODUCT) {
        j.qa = x->qa;
    }
    if (x && x->ncols > 0) {
        j.n = x->ncols;
        j.np = round_up(x->ncols, NC);
        j.panels = (const char *)j.panels +
                   (size_t)(x->col0 / NC) * (size_t)(h->kp * NC) * (size_t)(bits / 8);
        j.corr = j.corr ? j.corr + x->col0 : NULL;
        j.bias = bias ? bias + x->col0 : NULL;
    }
    if (m <= 0) {
        if (j.c_maxabs) {
            *j.c_maxabs = 0.0f;
        }
        return j.qa;
    }
    run_job(bits, impl, &j);
    if (j.c_maxabs && impl != KCPU_IGEMM_VNNI && j.phase != KCPU_IGEMM_QUANT) {
        *j.c_maxabs = kcpu_maxabs_f32(m, j.n, c, ldc); /* the VNNI epilogue measures it */
    }
    return j.qa;
}

/* The variant of impl for bits on a filled job. */
static void run_job(int bits, kcpu_igemm_impl impl, kcpu_igemm_job *jp) {
    switch (impl) {
#ifdef MT_HAVE_AVX512_BUILD
    case KCPU_IGEMM_VNNI:
        if (bits == 8) {
            kcpu_igemm_i8_vnni(jp);
        } else {
            kcpu_igemm_i16_vnni(jp);
        }
        break;
#endif
    case KCPU_IGEMM_AVX2:
        if (bits == 8) {
            kcpu_igemm_i8_avx2(jp);
        } else {
            kcpu_igemm_i16_avx2(jp);
        }
        break;
    case KCPU_IGEMM_SAT16:
        if (bits == 8) {
            int r = kcpu_intgemm_emulated();
            ref_i8_lanes(jp, r ? r : 64);
        } else {
            ref_i16(jp);
        }
        break;
    default:
        if (bits == 8) {
            ref_i8(jp);
        } else {
            ref_i16(jp);
        }
        break;
    }
}

static float run(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                 const void *packed_b, const float *bias, bool relu, float *c, int64_t ldc,
                 int32_t *acc, int64_t ldacc, void *scratch) {
    return run_ex(bits, impl, m, a, lda, packed_b, bias, relu, c, ldc, acc, ldacc, scratch, NULL);
}

void kcpu_gemm_i8(int64_t m, const float *a, int64_t lda, const void *packed_b, const float *bias,
                  float *c, int64_t ldc, void *scratch) {
    run(8, kcpu_igemm_active(), m, a, lda, packed_b, bias, false, c, ldc, NULL, 0, scratch);
}

void kcpu_gemm_i16(int64_t m, const float *a, int64_t lda, const void *packed_b, const float *bias,
                   float *c, int64_t ldc, void *scratch) {
    run(16, kcpu_igemm_active(), m, a, lda, packed_b, bias, false, c, ldc, NULL, 0, scratch);
}

void kcpu_gemm_i8_impl(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, const float *bias, float *c, int64_t ldc,
                       void *scratch) {
    run(8, impl, m, a, lda, packed_b, bias, false, c, ldc, NULL, 0, scratch);
}

void kcpu_gemm_i16_impl(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, const float *bias, float *c, int64_t ldc,
                        void *scratch) {
    run(16, impl, m, a, lda, packed_b, bias, false, c, ldc, NULL, 0, scratch);
}

float kcpu_gemm_i8_acc(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, int32_t *acc, int64_t ldacc, void *scratch) {
    return run(8, impl, m, a, lda, packed_b, NULL, false, NULL, 0, acc, ldacc, scratch);
}

float kcpu_gemm_i16_acc(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, int32_t *acc, int64_t ldacc, void *scratch) {
    return run(16, impl, m, a, lda, packed_b, NULL, false, NULL, 0, acc, ldacc, scratch);
}

void kcpu_gemm_int_ex(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                      const void *packed_b, const float *bias, bool relu, float *c, int64_t ldc,
                      void *scratch) {
    run(bits, impl, m, a, lda, packed_b, bias, relu, c, ldc, NULL, 0, scratch);
}

void kcpu_gemm_int_res(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, const float *bias, const float *res, int64_t ldr,
                       float *c, int64_t ldc, void *scratch) {
    run_extra x = {.res = res, .ldr = ldr};
    run_ex(bits, impl, m, a, lda, packed_b, bias, false, c, ldc, NULL, 0, scratch, &x);
}

/* The product's scratch, then (64-aligned) the running maxima [m, 16] and
** their columns [m, 16] (VNNI) or C [m, n] (the others) of
** kcpu_gemm_int_argmax, or a block's C of kcpu_gemm_int_topk. */
static size_t epilogue_base(int bits, int64_t m, int64_t k) {
    size_t b = bits == 8 ? kcpu_gemm_i8_scratch_bytes(m, k) : kcpu_gemm_i16_scratch_bytes(m, k);
    return b + 64;
}

size_t kcpu_gemm_int_argmax_scratch_bytes(int bits, kcpu_igemm_impl impl, int64_t m, int64_t k,
                                          int64_t n) {
    size_t extra = impl == KCPU_IGEMM_VNNI ? (size_t)m * 16 * (sizeof(float) + sizeof(int32_t))
                                           : (size_t)m * (size_t)n * sizeof(float);
    return epilogue_base(bits, m, k) + extra;
}

void kcpu_gemm_int_argmax(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                          const void *packed_b, const float *bias, const float *skip,
                          int32_t *out_idx, float *out_val, void *scratch) {
    if (m <= 0) {
        return;
    }
    const pack_hdr *h = packed_b;
    uintptr_t x = ((uintptr_t)scratch + epilogue_base(bits, m, h->k)) & ~(uintptr_t)63;
    if (impl != KCPU_IGEMM_VNNI) {
        float *c = (float *)x;
        run(bits, impl, m, a, lda, packed_b, bias, false, c, h->n, NULL, 0, scratch);
        kcpu_argmax_rows(m, h->n, c, skip, out_idx, out_val);
        return;
    }
    float *bv = (float *)x;
    int32_t *bi = (int32_t *)(bv + 16 * m);
    for (int64_t i = 0; i < 16 * m; i++) {
        bv[i] = -INFINITY;
        bi[i] = 0;
    }
    run_extra ex = {.am_val = bv, .am_idx = bi, .skip = skip};
    run_ex(bits, impl, m, a, lda, packed_b, bias, false, NULL, 0, NULL, 0, scratch, &ex);
    /* each lane holds its first maximum: the lowest column among the lanes
    ** at the row's maximum (lanes never above -inf keep -inf and 0) */
    for (int64_t r = 0; r < m; r++) {
        float best = -INFINITY;
        int32_t at = 0;
        for (int l = 0; l < 16; l++) {
            float v = bv[16 * r + l];
            int32_t c = bi[16 * r + l];
            if (v > best || (v == best && best > -INFINITY && c < at)) {
                best = v;
                at = c;
            }
        }
        out_idx[r] = at;
        if (out_val) {
            out_val[r] = best;
        }
    }
}

float kcpu_gemm_int_quant(int bits, kcpu_igemm_impl impl, int64_t m, int64_t k, const float *a,
                          int64_t lda, void *scratch) {
    kcpu_igemm_job j = {
        .m = m,
        .k = k,
        .kp = kp_of(bits, k),
        .a = a,
        .lda = lda,
        .scratch = (void *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63),
        .sa = scratch_row(bits, k),
        .qa = bits == 8 ? 1.0f : KCPU_I16_MULT,
        .phase = KCPU_IGEMM_QUANT,
    };
    if (m > 0) {
        run_job(bits, impl, &j);
    }
    return j.qa;
}

void kcpu_gemm_int_prepared(int bits, kcpu_igemm_impl impl, int64_t m, void *scratch, float qa,
                            const void *packed_b, const float *bias, bool relu, const float *res,
                            int64_t ldr, float *c, int64_t ldc) {
    run_extra x = {.res = res, .ldr = ldr, .phase = KCPU_IGEMM_PRODUCT, .qa = qa};
    run_ex(bits, impl, m, NULL, 0, packed_b, bias, relu, c, ldc, NULL, 0, scratch, &x);
}

void kcpu_gemm_int_max(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, const float *bias, bool relu, const float *res,
                       float a_maxabs, float *c_maxabs, float *c, int64_t ldc, void *scratch) {
    run_extra x = {.res = res,
                   .ldr = ldc,
                   .a_max_known = a_maxabs >= 0.0f,
                   .a_maxabs = a_maxabs,
                   .c_maxabs = c_maxabs};
    run_ex(bits, impl, m, a, lda, packed_b, bias, relu, c, ldc, NULL, 0, scratch, &x);
}

/* kcpu_gemm_int_topk where the top-k can take C in pieces
** (kcpu_topk_resumable): blocks of up to TOPK_PIECE_ROWS rows (one in
** decoding), each quantized once (int8 with max|A| of all m rows when there
** are several, so that each block quantizes as the whole product), then
** per TOPK_PIECE_COLS columns of B their product into a buffer and its
** top-k while it is in L1/L2.  The weights are read once per block, and no
** C larger than a piece goes out of cache and back (a beam-4 step with a
** shortlist: 109 x 4816 floats, 2 MB).  The columns a piece leaves for the
** next (less than 64) move to the buffer's start.  Otherwise blocks of rows
** whose whole C is at most TOPK_BLOCK_BYTES (all rows where C is within
** TOPK_WHOLE_BYTES), a multiple of the VNNI kernel's 6-row chunks, then
** their top-k.  Both are the top-k of the whole C, bit for bit. */
enum {
    TOPK_PIECE_COLS = 512,
    TOPK_PIECE_ROWS = 192,
    TOPK_BLOCK_BYTES = 1024 * 1024,
    TOPK_WHOLE_BYTES = 1536 * 1024
};

static int64_t topk_block_rows(int64_t m, int64_t n) {
    n = n > 0 ? n : 1;
    if (m <= TOPK_WHOLE_BYTES / (4 * n)) {
        return m;
    }
    int64_t r = TOPK_BLOCK_BYTES / (4 * n);
    r = r >= 6 ? r / 6 * 6 : (r > 0 ? r : 1);
    return r < m ? r : m;
}

static int64_t topk_piece_rows(int64_t m) { return m < TOPK_PIECE_ROWS ? m : TOPK_PIECE_ROWS; }

size_t kcpu_gemm_int_topk_scratch_bytes(int bits, int64_t m, int64_t k, int64_t n) {
    int64_t r = topk_block_rows(m, n), rp = topk_piece_rows(m);
    size_t blocks = epilogue_base(bits, r, k) + (size_t)r * (size_t)n * sizeof(float);
    size_t pieces = epilogue_base(bits, rp, k) +
                    (size_t)rp * ((TOPK_PIECE_COLS + NC) * sizeof(float) + sizeof(kcpu_topk_row));
    return blocks > pieces ? blocks : pieces;
}

static void topk_pieces(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, const float *bias, int32_t k, int32_t *out_idx,
                        float *out_logp, void *scratch) {
    const pack_hdr *h = packed_b;
    const int64_t n = h->n, rb = topk_piece_rows(m), w = TOPK_PIECE_COLS + NC;
    float *buf = (float *)(((uintptr_t)scratch + epilogue_base(bits, rb, h->k)) & ~(uintptr_t)63);
    kcpu_topk_row *st = (kcpu_topk_row *)(buf + rb * w);
    float amax = bits == 8 && rb < m ? kcpu_maxabs_f32(m, h->k, a, lda) : -1.0f;
    for (int64_t r0 = 0; r0 < m; r0 += rb) {
        const int64_t rows = m - r0 < rb ? m - r0 : rb;
        int32_t *oi = out_idx + r0 * k;
        float *ov = out_logp + r0 * k;
        run_extra q = {.phase = KCPU_IGEMM_QUANT, .a_max_known = amax >= 0.0f, .a_maxabs = amax};
        float qa = run_ex(bits, impl, rows, a + r0 * lda, lda, packed_b, NULL, false, NULL, 0, NULL,
                          0, scratch, &q);
        kcpu_topk_start(rows, st);
        int64_t done = 0; /* the first column not counted: the buffer's column 0 */
        for (int64_t j0 = 0; j0 < n; j0 += TOPK_PIECE_COLS) {
            const int64_t j1 = n - j0 < TOPK_PIECE_COLS ? n : j0 + TOPK_PIECE_COLS;
            run_extra x = {.phase = KCPU_IGEMM_PRODUCT, .qa = qa, .col0 = j0, .ncols = j1 - j0};
            run_ex(bits, impl, rows, NULL, 0, packed_b, bias, false, buf + (j0 - done), w, NULL, 0,
                   scratch, &x);
            int64_t c = kcpu_topk_piece(rows, n, buf, w, done, j1, k, st, oi, ov);
            for (int64_t i = 0; c < j1 && i < rows; i++) {
                memmove(buf + i * w, buf + i * w + (c - done), (size_t)(j1 - c) * sizeof(float));
            }
            done = c;
        }
        kcpu_topk_end(rows, n, k, st, oi, ov);
    }
}

void kcpu_gemm_int_topk(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, const float *bias, int32_t k, int32_t *out_idx,
                        float *out_logp, void *scratch) {
    if (m <= 0) {
        return;
    }
    if (kcpu_topk_resumable()) {
        topk_pieces(bits, impl, m, a, lda, packed_b, bias, k, out_idx, out_logp, scratch);
        return;
    }
    const pack_hdr *h = packed_b;
    const int64_t n = h->n, r = topk_block_rows(m, n);
    float *c = (float *)(((uintptr_t)scratch + epilogue_base(bits, r, h->k)) & ~(uintptr_t)63);
    /* int8: every block quantizes with the qa of all m rows (int16's is
    ** fixed; one block measures its own), so each row's C is the whole
    ** product's, bit for bit */
    float amax = bits == 8 && r < m ? kcpu_maxabs_f32(m, h->k, a, lda) : -1.0f;
    for (int64_t r0 = 0; r0 < m; r0 += r) {
        int64_t rows = m - r0 < r ? m - r0 : r;
        kcpu_gemm_int_max(bits, impl, rows, a + r0 * lda, lda, packed_b, bias, false, NULL, amax,
                          NULL, c, n, scratch);
        kcpu_softmax_topk(rows, n, c, NULL, k, out_idx + r0 * k, out_logp + r0 * k, NULL);
    }
}
