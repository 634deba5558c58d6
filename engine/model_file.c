/*
** model_file.c: the in-memory model file (mt_model_file: named tensors in
** file order plus the special:model.yml config), Marian's element type
** table, format dispatch and atomic writing.  The formats themselves live
** in npz.c (NumPy zip) and bin.c (Marian binary).
**
** Format choice (Marian picks by suffix only, src/common/io.cpp):
**   read:  ".npz" -> npz, ".bin" -> bin; any other suffix -> by magic:
**
**     OFFSET  SIZE  CONTENT                    FORMAT
**        0      4   "PK\3\4" or "PK\5\6"       npz (zip archive)
**        0      8   uint64 little-endian 1     bin (BINARY_FILE_VERSION)
**
**   write: ".npz" or ".bin" suffix required.  The file is written to
**          path + ".tmp", flushed, fsync'ed and renamed over path, so a
**          failed or interrupted write leaves the old file intact; on any
**          error the temporary file is removed.
**
** Files are mapped read-only (mmap) while parsing, so a model is read with
** one copy (file -> tensor buffers); files that cannot be mapped are read
** into a buffer instead.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mt.h"

/* ------------------------------------------------------ Marian types */

typedef enum type_class { TC_TYPED, TC_NUMERIC, TC_INTGEMM, TC_PACKED } type_class;

typedef struct type_info {
    uint32_t code;
    const char *name;
    uint8_t width;
    type_class cls;
    int dtype; /* mt_dtype for TC_TYPED, else -1 */
} type_info;

static const type_info type_table[] = {
    {MT_MARIAN_INT8, "int8", 1, TC_TYPED, MT_I8},
    {MT_MARIAN_INT16, "int16", 2, TC_TYPED, MT_I16},
    {MT_MARIAN_INT32, "int32", 4, TC_TYPED, MT_I32},
    {MT_MARIAN_INT64, "int64", 8, TC_NUMERIC, -1},
    {MT_MARIAN_UINT8, "uint8", 1, TC_NUMERIC, -1},
    {MT_MARIAN_UINT16, "uint16", 2, TC_NUMERIC, -1},
    {MT_MARIAN_UINT32, "uint32", 4, TC_NUMERIC, -1},
    {MT_MARIAN_UINT64, "uint64", 8, TC_NUMERIC, -1},
    {MT_MARIAN_FLOAT16, "float16", 2, TC_TYPED, MT_F16},
    {MT_MARIAN_FLOAT32, "float32", 4, TC_TYPED, MT_F32},
    {MT_MARIAN_FLOAT64, "float64", 8, TC_NUMERIC, -1},
    {MT_MARIAN_PACKED16, "packed16", 2, TC_PACKED, -1},
    {MT_MARIAN_PACKED8AVX2, "packed8avx2", 1, TC_PACKED, -1},
    {MT_MARIAN_PACKED8AVX512, "packed8avx512", 1, TC_PACKED, -1},
    {MT_MARIAN_INTGEMM8, "intgemm8", 1, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM16, "intgemm16", 2, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM8SSSE3, "intgemm8ssse3", 1, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM8AVX2, "intgemm8avx2", 1, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM8AVX512, "intgemm8avx512", 1, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM8AVX512VNNI, "intgemm8avx512vnni", 1, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM16SSE2, "intgemm16sse2", 2, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM16AVX2, "intgemm16avx2", 2, TC_INTGEMM, -1},
    {MT_MARIAN_INTGEMM16AVX512, "intgemm16avx512", 2, TC_INTGEMM, -1},
    {MT_MARIAN_BERGAMOT_INTGEMM8, "intgemm8-bergamot", 1, TC_INTGEMM, -1},
    {MT_MARIAN_BERGAMOT_INTGEMM16, "intgemm16-bergamot", 2, TC_INTGEMM, -1},
};

static const type_info *type_find(uint32_t code) {
    for (size_t i = 0; i < sizeof type_table / sizeof type_table[0]; i++)
        if (type_table[i].code == code) return &type_table[i];
    return NULL;
}

const char *mt_marian_type_name(uint32_t type) {
    const type_info *t = type_find(type);
    return t ? t->name : NULL;
}

size_t mt_marian_type_width(uint32_t type) {
    const type_info *t = type_find(type);
    return t ? t->width : 0;
}

size_t mt_marian_required_bytes(uint32_t type, int64_t numel) {
    const type_info *t = type_find(type);
    if (t == NULL || t->cls == TC_PACKED || numel < 0) return 0;
    if ((uint64_t)numel > (SIZE_MAX - 4) / t->width) return SIZE_MAX;
    return (size_t)numel * t->width + (t->cls == TC_INTGEMM ? 4 : 0);
}

uint32_t mt_marian_type_of(mt_dtype t) {
    switch (t) {
    case MT_F32: return MT_MARIAN_FLOAT32;
    case MT_F16: return MT_MARIAN_FLOAT16;
    case MT_I8: return MT_MARIAN_INT8;
    case MT_I16: return MT_MARIAN_INT16;
    case MT_I32: return MT_MARIAN_INT32;
    default: break;
    }
    MT_ASSERT(!"mt_marian_type_of: bad dtype");
    return 0;
}

/* -------------------------------------------------- the model file */

static int64_t shape_numel(const mt_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->dim[i];
    return n;
}

mt_model_file *mt_model_file_new(void) { return mt_try_calloc(1, sizeof(mt_model_file)); }

void mt_model_file_free(mt_model_file *m) {
    if (m == NULL) return;
    for (int i = 0; i < m->n; i++) {
        mt_free(m->names[i]);
        if (m->tensors[i].owns) mt_aligned_free(m->tensors[i].data);
    }
    mt_free(m->names);
    mt_free(m->tensors);
    mt_free(m->items);
    mt_free(m->config_yaml);
    mt_free(m);
}

int mt_model_file_index(const mt_model_file *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0) return i;
    return -1;
}

const mt_tensor *mt_model_file_find(const mt_model_file *m, const char *name) {
    int i = mt_model_file_index(m, name);
    return i < 0 ? NULL : &m->tensors[i];
}

/* Grows the three parallel arrays to hold at least one more item. */
static mt_status reserve_one(mt_model_file *m) {
    if (m->n < m->cap) return MT_OK;
    if (m->cap > (1 << 28)) return mt_seterr(MT_ERR_NOMEM, "model file: too many items");
    int cap = m->cap ? 2 * m->cap : 16;
    char **names = mt_try_realloc(m->names, (size_t)cap * sizeof *names);
    if (names == NULL) goto nomem;
    m->names = names;
    mt_tensor *tensors = mt_try_realloc(m->tensors, (size_t)cap * sizeof *tensors);
    if (tensors == NULL) goto nomem;
    m->tensors = tensors;
    mt_model_item *items = mt_try_realloc(m->items, (size_t)cap * sizeof *items);
    if (items == NULL) goto nomem;
    m->items = items;
    m->cap = cap;
    return MT_OK;
nomem:
    return mt_seterr(MT_ERR_NOMEM, "model file: out of memory growing the item list to %d", cap);
}

mt_status mt_model_file_adopt(mt_model_file *m, const char *name, mt_tensor *t,
                              const mt_model_item *info) {
    MT_ASSERT(m != NULL && name != NULL && t != NULL);
    mt_model_item it;
    if (info) {
        it = *info;
    } else {
        memset(&it, 0, sizeof it);
        it.marian_type = mt_marian_type_of(t->dtype);
    }
    if (t->shape.ndim < 0 || t->shape.ndim > MT_MAX_DIMS)
        return mt_seterr(MT_ERR_INVALID, "model item '%s': bad number of dimensions %d", name,
                         t->shape.ndim);
    if (!it.raw && (t->dtype < 0 || t->dtype >= MT_DTYPE_COUNT))
        return mt_seterr(MT_ERR_INVALID, "model item '%s': bad dtype %d", name, (int)t->dtype);
    if (mt_model_file_index(m, name) >= 0)
        return mt_seterr(MT_ERR_INVALID, "model item '%s' appears twice", name);
    if (strcmp(name, "special:model.yml") == 0)
        return mt_seterr(MT_ERR_INVALID,
                         "'special:model.yml' is the config: use mt_model_file_set_config");
    mt_status rc = reserve_one(m);
    if (rc != MT_OK) return rc;
    char *nm = mt_try_strdup(name);
    if (nm == NULL) return mt_seterr(MT_ERR_NOMEM, "model item '%s': out of memory", name);
    if (!it.raw) it.marian_type = mt_marian_type_of(t->dtype);
    m->names[m->n] = nm;
    m->tensors[m->n] = *t;
    m->tensors[m->n].owns = true;
    m->tensors[m->n].dev = NULL;
    m->items[m->n] = it;
    m->n++;
    t->owns = false;
    return MT_OK;
}

/* Adopts a fresh aligned copy of bytes of host data. */
static mt_status add_copy(mt_model_file *m, const char *name, mt_shape shape, mt_dtype dtype,
                          const mt_model_item *info, const void *data, size_t bytes) {
    void *buf = mt_try_aligned_alloc(bytes ? bytes : 1);
    if (buf == NULL)
        return mt_seterr(MT_ERR_NOMEM, "model item '%s': out of memory (%zu bytes)", name, bytes);
    if (bytes) memcpy(buf, data, bytes);
    mt_tensor t = {.shape = shape, .dtype = dtype, .data = buf, .dev = NULL, .owns = true};
    mt_status rc = mt_model_file_adopt(m, name, &t, info);
    if (rc != MT_OK) mt_aligned_free(buf);
    return rc;
}

static mt_status check_shape(const char *name, const mt_shape *s) {
    if (s->ndim < 0 || s->ndim > MT_MAX_DIMS)
        return mt_seterr(MT_ERR_INVALID, "model item '%s': bad number of dimensions %d", name,
                         s->ndim);
    for (int i = 0; i < s->ndim; i++)
        if (s->dim[i] < 0 || s->dim[i] > INT32_MAX)
            return mt_seterr(MT_ERR_INVALID, "model item '%s': bad dimension %lld", name,
                             (long long)s->dim[i]);
    return MT_OK;
}

mt_status mt_model_file_add(mt_model_file *m, const char *name, const mt_tensor *t) {
    MT_ASSERT(m != NULL && name != NULL && t != NULL);
    if (t->dtype < 0 || t->dtype >= MT_DTYPE_COUNT || t->dtype == MT_BF16)
        return mt_seterr(MT_ERR_INVALID, "model item '%s': bad dtype %d", name, (int)t->dtype);
    mt_status rc = check_shape(name, &t->shape);
    if (rc != MT_OK) return rc;
    size_t bytes = mt_marian_required_bytes(mt_marian_type_of(t->dtype), shape_numel(&t->shape));
    if (bytes == SIZE_MAX) return mt_seterr(MT_ERR_INVALID, "model item '%s': too large", name);
    if (t->dev == NULL) return add_copy(m, name, t->shape, t->dtype, NULL, t->data, bytes);
    /* a device tensor (CPU or CUDA): copy through the device */
    void *buf = mt_try_aligned_alloc(bytes ? bytes : 1);
    if (buf == NULL)
        return mt_seterr(MT_ERR_NOMEM, "model item '%s': out of memory (%zu bytes)", name, bytes);
    rc = bytes ? mt_tensor_get(t, buf, bytes) : MT_OK;
    if (rc == MT_OK) {
        mt_tensor c = {.shape = t->shape, .dtype = t->dtype, .data = buf, .owns = true};
        rc = mt_model_file_adopt(m, name, &c, NULL);
    }
    if (rc != MT_OK) mt_aligned_free(buf);
    return rc;
}

mt_status mt_model_file_add_raw(mt_model_file *m, const char *name, uint32_t marian_type,
                                mt_shape shape, const void *data, size_t bytes) {
    MT_ASSERT(m != NULL && name != NULL && (data != NULL || bytes == 0));
    const type_info *ti = type_find(marian_type);
    if (ti == NULL)
        return mt_seterr(MT_ERR_UNSUPPORTED, "model item '%s': unknown Marian type 0x%x", name,
                         (unsigned)marian_type);
    if (ti->cls == TC_TYPED)
        return mt_seterr(MT_ERR_INVALID,
                         "model item '%s': type %s is not raw (use mt_model_file_add)", name,
                         ti->name);
    mt_status rc = check_shape(name, &shape);
    if (rc != MT_OK) return rc;
    size_t need = mt_marian_required_bytes(marian_type, shape_numel(&shape));
    if (ti->cls != TC_PACKED && need != bytes)
        return mt_seterr(MT_ERR_INVALID,
                         "model item '%s': %s of %lld elements needs %zu bytes, "
                         "got %zu",
                         name, ti->name, (long long)shape_numel(&shape), need, bytes);
    mt_model_item it = {.marian_type = marian_type, .raw = true, .raw_bytes = bytes};
    return add_copy(m, name, shape, ti->width == 1 ? MT_I8 : MT_I16, &it, data, bytes);
}

mt_status mt_model_file_set_config(mt_model_file *m, const char *yaml) {
    MT_ASSERT(m != NULL);
    char *c = NULL;
    if (yaml != NULL) {
        c = mt_try_strdup(yaml);
        if (c == NULL) return mt_seterr(MT_ERR_NOMEM, "model config: out of memory");
    }
    mt_free(m->config_yaml);
    m->config_yaml = c;
    return MT_OK;
}

/* ------------------------------------------------------------ reading */

static const char *err_text(int err, char *buf, size_t n) {
    /* GNU strerror_r (we build with _GNU_SOURCE) may return a static string */
    return strerror_r(err, buf, n);
}

/* "path: cannot <verb>: <reason>", with the disk-full family spelled out. */
static mt_status io_error(const char *path, const char *verb, int err) {
    char buf[128];
    if (err == ENOSPC)
        return mt_seterr(MT_ERR_IO, "%s: cannot %s: disk full (no space left on device)", path,
                         verb);
    if (err == EDQUOT)
        return mt_seterr(MT_ERR_IO, "%s: cannot %s: disk quota exceeded", path, verb);
    if (err == EFBIG)
        return mt_seterr(MT_ERR_IO, "%s: cannot %s: file too large (file size limit reached)", path,
                         verb);
    return mt_seterr(MT_ERR_IO, "%s: cannot %s: %s", path, verb, err_text(err, buf, sizeof buf));
}

static bool has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

mt_status mt_model_file_read_mem(const void *data, size_t size, const char *name,
                                 mt_model_file **out) {
    const unsigned char *p = data;
    if (name == NULL) name = "<memory>";
    if (size >= 4 && p[0] == 'P' && p[1] == 'K') return mt_npz_read_mem(data, size, name, out);
    return mt_bin_read_mem(data, size, name, out);
}

/* Reads a file that cannot be mapped into an allocated buffer. */
static mt_status read_all(int fd, const char *path, size_t size, unsigned char **out) {
    unsigned char *buf = mt_try_malloc(size);
    if (buf == NULL) return mt_seterr(MT_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, size);
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            mt_free(buf);
            if (r == 0) return mt_seterr(MT_ERR_IO, "%s: file shrank while reading", path);
            return io_error(path, "read", errno);
        }
        got += (size_t)r;
    }
    *out = buf;
    return MT_OK;
}

mt_status mt_model_file_read(const char *path, mt_model_file **out) {
    MT_ASSERT(path != NULL && out != NULL);
    mt_status rc;
    unsigned char *buf = NULL;
    void *map = MAP_FAILED;
    size_t size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error(path, "open", errno);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = io_error(path, "stat", errno);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = mt_seterr(MT_ERR_IO, "%s: is a directory, not a model file", path);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = mt_seterr(MT_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        rc = mt_seterr(MT_ERR_IO, "%s: too large for this platform", path);
        goto done;
    }
    size = (size_t)st.st_size;
    if (size == 0) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: file is empty", path);
        goto done;
    }
    const unsigned char *data;
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
        data = map;
    } else {
        rc = read_all(fd, path, size, &buf);
        if (rc != MT_OK) goto done;
        data = buf;
    }
    if (has_suffix(path, ".npz"))
        rc = mt_npz_read_mem(data, size, path, out);
    else if (has_suffix(path, ".bin"))
        rc = mt_bin_read_mem(data, size, path, out);
    else
        rc = mt_model_file_read_mem(data, size, path, out);
done:
    if (map != MAP_FAILED) munmap(map, size);
    mt_free(buf);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------ writing */

typedef struct file_sink {
    FILE *f;
    const char *path; /* the temporary file, for messages */
} file_sink;

static mt_status sink_write(void *user, const void *data, size_t n) {
    file_sink *s = user;
    if (n == 0) return MT_OK;
    errno = 0;
    if (fwrite(data, 1, n, s->f) != n) return io_error(s->path, "write", errno ? errno : EIO);
    return MT_OK;
}

/* Makes the rename durable (best effort: some filesystems refuse). */
static void sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (slash == NULL) {
        strcpy(dir, ".");
    } else {
        size_t n = (size_t)(slash - path);
        if (n == 0) n = 1; /* "/file" */
        if (n >= sizeof dir) return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

mt_status mt_model_file_write(const char *path, const mt_model_file *m) {
    MT_ASSERT(path != NULL && m != NULL);
    bool npz = has_suffix(path, ".npz");
    if (!npz && !has_suffix(path, ".bin"))
        return mt_seterr(MT_ERR_INVALID,
                         "%s: cannot tell the model format from the file name "
                         "(use a .npz or .bin suffix)",
                         path);
    mt_status rc;
    size_t n = strlen(path);
    char *tmp = mt_try_malloc(n + 5);
    if (tmp == NULL) return mt_seterr(MT_ERR_NOMEM, "%s: out of memory", path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);

    file_sink sink = {.f = fopen(tmp, "wb"), .path = tmp};
    if (sink.f == NULL) {
        rc = io_error(tmp, "create", errno);
        goto fail;
    }
    rc = npz ? mt_npz_write_to(m, path, sink_write, &sink)
             : mt_bin_write_to(m, path, sink_write, &sink);
    if (rc != MT_OK) goto fail;
    if (fflush(sink.f) != 0) {
        rc = io_error(tmp, "write", errno);
        goto fail;
    }
    if (fsync(fileno(sink.f)) != 0 && errno != EINVAL && errno != EROFS) {
        rc = io_error(tmp, "sync", errno);
        goto fail;
    }
    FILE *f = sink.f;
    sink.f = NULL;
    if (fclose(f) != 0) {
        rc = io_error(tmp, "close", errno);
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        rc = io_error(path, "rename the temporary file to", errno);
        goto fail;
    }
    sync_parent_dir(path);
    mt_free(tmp);
    return MT_OK;
fail:
    if (sink.f) fclose(sink.f);
    unlink(tmp);
    mt_free(tmp);
    return rc;
}
