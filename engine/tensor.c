/*
** tensor.c: shapes, dtypes, tensors (shape + dtype + device data) and the
** scalar f16 <-> f32 conversions.
**
** Tensor data is reached only through the device vtable (alloc, free, copy,
** memset0), so the same code serves host and CUDA memory.  A tensor whose
** dev is NULL lives on the CPU device.
*/
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "mt.h"

/* --------------------------------------------------------------- dtypes */

size_t mt_dtype_size(mt_dtype t) {
    switch (t) {
    case MT_F32: return 4;
    case MT_F16: return 2;
    case MT_BF16: return 2;
    case MT_I8: return 1;
    case MT_I16: return 2;
    case MT_I32: return 4;
    default: break;
    }
    MT_ASSERT(!"mt_dtype_size: unknown dtype");
    return 0;
}

const char *mt_dtype_name(mt_dtype t) {
    switch (t) {
    case MT_F32: return "float32";
    case MT_F16: return "float16";
    case MT_BF16: return "bfloat16";
    case MT_I8: return "int8";
    case MT_I16: return "int16";
    case MT_I32: return "int32";
    default: return "unknown";
    }
}

/* --------------------------------------------------------------- shapes */

/* Unused dims are kept at zero: shapes are compared and hashed bytewise. */
mt_shape mt_shape_make(int ndim, const int64_t *dims) {
    MT_ASSERT(ndim >= 0 && ndim <= MT_MAX_DIMS);
    mt_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        s.dim[i] = dims[i];
    return s;
}

mt_shape mt_shape1(int64_t d0) { return mt_shape_make(1, &d0); }

mt_shape mt_shape2(int64_t d0, int64_t d1) {
    int64_t d[2] = {d0, d1};
    return mt_shape_make(2, d);
}

mt_shape mt_shape3(int64_t d0, int64_t d1, int64_t d2) {
    int64_t d[3] = {d0, d1, d2};
    return mt_shape_make(3, d);
}

mt_shape mt_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t d[4] = {d0, d1, d2, d3};
    return mt_shape_make(4, d);
}

int64_t mt_shape_numel(const mt_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->dim[i];
    return n;
}

bool mt_shape_eq(const mt_shape *a, const mt_shape *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++) {
        if (a->dim[i] != b->dim[i]) return false;
    }
    return true;
}

char *mt_shape_str(const mt_shape *s, char *buf, size_t n) {
    if (n == 0) return buf;
    size_t used = 0;
    buf[0] = '\0';
    int w = snprintf(buf, n, "[");
    used = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < s->ndim && used < n; i++) {
        w = snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used < n) snprintf(buf + used, n - used, "]");
    buf[n - 1] = '\0';
    return buf;
}

/* -------------------------------------------------------------- tensors */

static mt_device *dev_of(const mt_tensor *t) { return t->dev ? t->dev : mt_device_cpu(); }

mt_status mt_tensor_init(mt_device *dev, mt_dtype dtype, mt_shape shape, mt_tensor *out) {
    memset(out, 0, sizeof *out);
    if (dev == NULL) dev = mt_device_cpu();
    MT_ASSERT((int)dtype >= 0 && dtype < MT_DTYPE_COUNT);
    char sb[96];
    for (int i = 0; i < shape.ndim; i++) {
        if (shape.dim[i] < 0) {
            return mt_seterr(MT_ERR_INVALID, "tensor: negative dimension in shape %s",
                             mt_shape_str(&shape, sb, sizeof sb));
        }
    }
    size_t bytes = (size_t)mt_shape_numel(&shape) * mt_dtype_size(dtype);
    /* Zero-sized tensors still get a (small) block, so data != NULL means
    ** "allocated" everywhere. */
    void *data = dev->ops->alloc(dev, bytes ? bytes : 64);
    if (data == NULL) {
        return mt_seterr(MT_ERR_NOMEM, "tensor: cannot allocate %zu bytes for %s %s on %s", bytes,
                         mt_dtype_name(dtype), mt_shape_str(&shape, sb, sizeof sb), dev->ops->name);
    }
    if (bytes) {
        mt_status rc = dev->ops->memset0(dev, data, bytes);
        if (rc != MT_OK) {
            dev->ops->free(dev, data);
            return rc;
        }
    }
    out->shape = shape;
    out->dtype = dtype;
    out->data = data;
    out->dev = dev;
    out->owns = true;
    return MT_OK;
}

void mt_tensor_free(mt_tensor *t) {
    if (t == NULL) return;
    if (t->owns && t->data != NULL) {
        mt_device *d = dev_of(t);
        d->ops->free(d, t->data);
    }
    memset(t, 0, sizeof *t);
}

int64_t mt_tensor_numel(const mt_tensor *t) { return mt_shape_numel(&t->shape); }

size_t mt_tensor_bytes(const mt_tensor *t) {
    return (size_t)mt_shape_numel(&t->shape) * mt_dtype_size(t->dtype);
}

static mt_status check_copy(const mt_tensor *t, size_t bytes, const char *what) {
    if (bytes != mt_tensor_bytes(t)) {
        char sb[96];
        return mt_seterr(MT_ERR_INVALID, "%s: %zu bytes given for %s %s (%zu bytes)", what, bytes,
                         mt_dtype_name(t->dtype), mt_shape_str(&t->shape, sb, sizeof sb),
                         mt_tensor_bytes(t));
    }
    if (t->data == NULL && bytes) return mt_seterr(MT_ERR_INVALID, "%s: tensor has no data", what);
    return MT_OK;
}

mt_status mt_tensor_set(mt_tensor *t, const void *host, size_t bytes) {
    mt_status rc = check_copy(t, bytes, "mt_tensor_set");
    if (rc != MT_OK || bytes == 0) return rc;
    mt_device *d = dev_of(t);
    return d->ops->copy(d, t->data, host, bytes, 0);
}

mt_status mt_tensor_get(const mt_tensor *t, void *host, size_t bytes) {
    mt_status rc = check_copy(t, bytes, "mt_tensor_get");
    if (rc != MT_OK || bytes == 0) return rc;
    mt_device *d = dev_of(t);
    return d->ops->copy(d, host, t->data, bytes, 1);
}

/* ------------------------------------------------------------ f16 <-> f32
** binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
** binary32: 1 sign, 8 exponent (bias 127), 23 mantissa bits.
** Narrowing rounds to nearest, ties to even; values beyond the f16 range
** become inf, values below half the smallest subnormal become zero, NaNs
** stay (quiet) NaNs. */

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

/* q / 2^shift rounded to nearest even (1 <= shift <= 31). */
static uint32_t shift_rne(uint32_t q, int shift) {
    uint32_t kept = q >> shift;
    uint32_t rem = q & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (kept & 1u))) kept++;
    return kept;
}

uint16_t mt_f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    int exp = (int)((u >> 23) & 0xffu);
    uint32_t mant = u & 0x7fffffu;

    if (exp == 0xff) { /* inf or NaN (keep a mantissa bit set for NaN) */
        if (mant == 0) return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7e00u | (mant >> 13));
    }
    if (exp == 0) return sign; /* zero or f32 subnormal: far below f16 range */

    int he = exp - 112; /* rebias: 127 - 15 */
    if (he >= 31) return (uint16_t)(sign | 0x7c00u);
    if (he <= 0) { /* f16 subnormal: count units of 2^-24 */
        int shift = 14 - he;
        if (shift > 24) return sign;
        uint32_t q = shift_rne(mant | 0x800000u, shift); /* may carry into 0x400: normal */
        return (uint16_t)(sign | q);
    }
    uint32_t q = ((uint32_t)he << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++; /* carry may give inf: right */
    return (uint16_t)(sign | q);
}

float mt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0) {
        if (m == 0) return bits_f32(sign);
        uint32_t e32 = 113; /* subnormal: normalise m * 2^-24 */
        while (!(m & 0x400u)) {
            m <<= 1;
            e32--;
        }
        m &= 0x3ffu;
        return bits_f32(sign | (e32 << 23) | (m << 13));
    }
    if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}
