/*
** gather.c: row gather / scatter-add (embeddings), general permute and the
** 2-D strided copy used by concat and slice.
*/
#include "kcpu_impl.h"

#include <string.h>

void kcpu_gather_rows(int64_t n_ids, const int32_t *ids, int64_t dim, const float *table,
                      float *out) {
    if (dim > 0) kcpu_gather_bytes(n_ids, ids, (size_t)dim * sizeof *out, table, out);
}

void kcpu_scatter_add_rows(int64_t n_ids, const int32_t *ids, int64_t dim, const float *dout,
                           float *dtable) {
    for (int64_t i = 0; i < n_ids; i++) {
        float *t = dtable + (int64_t)ids[i] * dim;
        const float *d = dout + i * dim;
        for (int64_t j = 0; j < dim; j++) {
            t[j] += d[j];
        }
    }
}

enum { PERM_MAX_DIMS = 8 };

void kcpu_permute(int ndim, const int64_t *shape, const int *perm, const float *x, float *y) {
    if (ndim <= 0) {
        y[0] = x[0];
        return;
    }
    if (ndim > PERM_MAX_DIMS) {
        return; /* programmer error: callers stay within MT_MAX_DIMS */
    }
    int64_t xs[PERM_MAX_DIMS], ys[PERM_MAX_DIMS], st[PERM_MAX_DIMS], idx[PERM_MAX_DIMS];
    int64_t s = 1, total = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        xs[d] = s;
        s *= shape[d];
    }
    for (int d = 0; d < ndim; d++) {
        ys[d] = shape[perm[d]];
        st[d] = xs[perm[d]];
        idx[d] = 0;
        total *= ys[d];
    }
    if (total <= 0) {
        return;
    }
    int64_t n = ys[ndim - 1], inc = st[ndim - 1], rows = total / n, off = 0;
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * n;
        const float *xr = x + off;
        if (inc == 1) {
            memcpy(yr, xr, (size_t)n * sizeof *yr);
        } else {
            for (int64_t i = 0; i < n; i++) {
                yr[i] = xr[i * inc];
            }
        }
        for (int d = ndim - 2; d >= 0; d--) {
            idx[d]++;
            off += st[d];
            if (idx[d] < ys[d]) {
                break;
            }
            off -= st[d] * ys[d];
            idx[d] = 0;
        }
    }
}

void kcpu_copy2d(int64_t rows, int64_t cols, const float *src, int64_t ss, float *dst,
                 int64_t sd, bool accumulate) {
    if (cols <= 0) {
        return;
    }
    if (!accumulate) {
        kcpu_copy2d_bytes(rows, (size_t)cols * sizeof *dst, src, (size_t)ss * sizeof *src, dst,
                          (size_t)sd * sizeof *dst);
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *s = src + r * ss;
        float *d = dst + r * sd;
        for (int64_t j = 0; j < cols; j++) {
            d[j] += s[j];
        }
    }
}

void kcpu_copy2d_bytes(int64_t rows, size_t bytes, const void *src, size_t ss, void *dst,
                       size_t sd) {
    for (int64_t r = 0; r < rows && bytes > 0; r++) {
        memmove((char *)dst + (size_t)r * sd, (const char *)src + (size_t)r * ss, bytes);
    }
}

void kcpu_gather_bytes(int64_t n_ids, const int32_t *ids, size_t bytes, const void *table,
                       void *out) {
    if (bytes == sizeof(uint32_t)) { /* a column selection (shortlisted bias): no call per row */
        for (int64_t i = 0; i < n_ids; i++) {
            memcpy((uint32_t *)out + i, (const uint32_t *)table + ids[i], sizeof(uint32_t));
        }
        return;
    }
    /* The rows (embeddings of a step's tokens: scattered over an 8 MB table)
    ** are requested a few rows ahead, so that their misses overlap instead
    ** of each copy waiting for its own (the first lines only: the hardware
    ** prefetcher follows a long row by itself). */
    enum { AHEAD = 4, LINES = 16 };
    for (int64_t i = 0; i < n_ids && bytes > 0; i++) {
        if (i + AHEAD < n_ids) {
            const char *p = (const char *)table + (size_t)ids[i + AHEAD] * bytes;
            for (size_t l = 0; l < LINES && l * 64 < bytes; l++) {
                __builtin_prefetch(p + l * 64);
            }
        }
        memcpy((char *)out + (size_t)i * bytes, (const char *)table + (size_t)ids[i] * bytes,
               bytes);
    }
}
