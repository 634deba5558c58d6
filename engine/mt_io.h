/*
** mt_io.h: model files: Marian's .npz and .bin (read, write, items and
** their Marian types), model configs (YAML), the conversion of weights to
** Marian's intgemm items, and model-file items as parameters.  Part of
** the engine's public API (mt.h includes it).
*/
#ifndef MT_IO_H
#define MT_IO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_graph.h"
#include "mt_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ Marian types and items */

/* Marian element type codes (src/common/types.h): class bits + byte size.
** They appear in .bin headers and in mt_model_item.marian_type. */
enum {
    MT_MARIAN_INT8 = 0x101,
    MT_MARIAN_INT16 = 0x102,
    MT_MARIAN_INT32 = 0x104,
    MT_MARIAN_INT64 = 0x108,
    MT_MARIAN_UINT8 = 0x201,
    MT_MARIAN_UINT16 = 0x202,
    MT_MARIAN_UINT32 = 0x204,
    MT_MARIAN_UINT64 = 0x208,
    MT_MARIAN_FLOAT16 = 0x402,
    MT_MARIAN_FLOAT32 = 0x404,
    MT_MARIAN_FLOAT64 = 0x408,
    MT_MARIAN_PACKED16 = 0x802,
    MT_MARIAN_PACKED8AVX2 = 0x1801,
    MT_MARIAN_PACKED8AVX512 = 0x2801,
    MT_MARIAN_INTGEMM8 = 0x10001,
    MT_MARIAN_INTGEMM16 = 0x10002,
    MT_MARIAN_INTGEMM8SSSE3 = 0x18001,
    MT_MARIAN_INTGEMM8AVX2 = 0x11001,
    MT_MARIAN_INTGEMM8AVX512 = 0x12001,
    MT_MARIAN_INTGEMM8AVX512VNNI = 0x13001,
    MT_MARIAN_INTGEMM16SSE2 = 0x14002,
    MT_MARIAN_INTGEMM16AVX2 = 0x11002,
    MT_MARIAN_INTGEMM16AVX512 = 0x12002,
    MT_MARIAN_BERGAMOT_INTGEMM8 = 0x4101, /* Bergamot/Firefox fork's enum */
    MT_MARIAN_BERGAMOT_INTGEMM16 = 0x4102,
};

/* Marian's name of a type code ("float32", "intgemm8avx2", ...; NULL if
** unknown) and its element width in bytes (0 for unknown). */
const char *mt_marian_type_name(uint32_t type);
size_t mt_marian_type_width(uint32_t type);
/* Bytes of an item of numel elements (Marian's requiredBytes): numel *
** width, plus 4 for intgemm types (the float quantization multiplier stored
** after the integers).  0 for packed FBGEMM types (their size is opaque) and
** unknown codes; SIZE_MAX on overflow. */
size_t mt_marian_required_bytes(uint32_t type, int64_t numel);
/* Marian type code of an mt_dtype (MT_F32 -> 0x404, ...). */
uint32_t mt_marian_type_of(mt_dtype t);

/* Per-item details of a model file, parallel to names/tensors.
**   marian_type  the Marian type code the item has in the file (for typed
**                items it follows tensors[i].dtype: 0x404 for MT_F32, ...).
**   raw          false: tensors[i] is an ordinary tensor of dtype F32, F16,
**                I8, I16 or I32.  true: tensors[i].data holds raw_bytes
**                opaque bytes of marian_type (intgemm8/16 and their ISA
**                variants incl. the 4-byte quantization multiplier, packed
**                FBGEMM types, Bergamot 0x4101/0x4102, and float64, int64,
**                uint8..uint64 which have no mt_dtype); tensors[i].shape is
**                the item's logical shape and tensors[i].dtype only a storage
**                hint (MT_I8 or MT_I16): never compute with it.
**   raw_bytes    raw items: bytes of meaningful data (intgemm: numel*width+4).
**   bin_bytes    the .bin dataLength the item was read with (Marian rounds
**                blobs up to 256 bytes); the data buffer holds all of them so
**                that a .bin round-trips bit-exactly.  0 when the item did not
**                come from a .bin: the .bin writer then pads to 256 bytes. */
typedef struct mt_model_item {
    uint32_t marian_type;
    bool raw;
    size_t raw_bytes;
    size_t bin_bytes;
} mt_model_item;

/* ------------------------------------------------------------ model files */

/* A loaded model file: named tensors (in file order) and the YAML config
** text from "special:model.yml" (NULL if absent).  Tensors are host memory. */
typedef struct mt_model_file {
    int n;
    char **names;
    mt_tensor *tensors;
    char *config_yaml;
    /* kept by the model-file module (engine/model_file.c): */
    mt_model_item *items; /* n entries, see mt_model_item              */
    int cap;              /* allocated entries of names/tensors/items   */
} mt_model_file;

/* Model file tensors are host memory: dev is NULL, owns is true, data comes
** from mt_try_aligned_alloc (so mt_params_adopt may take it).  Free them
** only through mt_model_file_free.
**
** .npz dtypes: <f4 <f2 <i1 <i2 <i4 (and |i1, =f4 ...) become F32, F16, I8,
** I16, I32 tensors; <f8 <i8 <u1 <u2 <u4 <u8 are kept as raw items with
** their Marian type (written back with the same descr); anything else
** (bool, complex, strings, structured, big-endian) is refused with
** MT_ERR_UNSUPPORTED naming the member and the dtype.  Writing .npz refuses
** raw items that have no NumPy dtype (intgemm, packed) with
** MT_ERR_UNSUPPORTED naming the item. */

/* Reads .npz (stored or deflated members, zip64) or .bin (by file suffix,
** or by magic when the suffix is neither).  Validates every size and offset. */
mt_status mt_model_file_read(const char *path, mt_model_file **out);
/* Writes by suffix.  Atomic: writes path + ".tmp", fsyncs, renames. */
mt_status mt_model_file_write(const char *path, const mt_model_file *m);
void mt_model_file_free(mt_model_file *m);
mt_status mt_model_file_add(mt_model_file *m, const char *name, const mt_tensor *t); /* copies */
mt_model_file *mt_model_file_new(void);
mt_status mt_model_file_set_config(mt_model_file *m, const char *yaml);
const mt_tensor *mt_model_file_find(const mt_model_file *m, const char *name);
/* Adds a raw item (copied): bytes of data of Marian type marian_type with
** logical shape shape.  Typed Marian types (float32, ...) are refused with
** MT_ERR_INVALID: use mt_model_file_add.  Unknown codes: MT_ERR_UNSUPPORTED. */
mt_status mt_model_file_add_raw(mt_model_file *m, const char *name, uint32_t marian_type,
                                mt_shape shape, const void *data, size_t bytes);
/* Appends an item, moving t's data into m (t->owns becomes false) on
** success; on failure t is untouched.  t->data must come from
** mt_try_aligned_alloc and hold at least max(tensor bytes or
** info->raw_bytes, info->bin_bytes) bytes.  info NULL: a typed item
** described by t->dtype.  Names must be unique (MT_ERR_INVALID otherwise). */
mt_status mt_model_file_adopt(mt_model_file *m, const char *name, mt_tensor *t,
                              const mt_model_item *info);
/* Index of the item called name, -1 if absent. */
int mt_model_file_index(const mt_model_file *m, const char *name);

/* Reads a model from memory, format by magic ("PK" = npz, else .bin); name
** is used in error messages.  The buffer is not kept. */
mt_status mt_model_file_read_mem(const void *data, size_t size, const char *name,
                                 mt_model_file **out);
/* Format-specific readers and writers (engine/npz.c, engine/bin.c).  The
** writers stream the file through fn, which returns MT_OK or an error that
** is passed back unchanged; name is used in messages. */
typedef mt_status (*mt_write_fn)(void *user, const void *data, size_t n);
mt_status mt_npz_read_mem(const void *data, size_t size, const char *name, mt_model_file **out);
mt_status mt_bin_read_mem(const void *data, size_t size, const char *name, mt_model_file **out);
mt_status mt_npz_write_to(const mt_model_file *m, const char *name, mt_write_fn fn, void *user);
mt_status mt_bin_write_to(const mt_model_file *m, const char *name, mt_write_fn fn, void *user);

/* ------------------------------------------ model-file items as parameters */

/* Makes item i's tensor t (and its details item, NULL for a typed tensor)
** a parameter of p.  Typed items: mt_params_adopt (t's data moves).
** Marian's generic intgemm8 / intgemm16 items (the values of W [K, N]
** transposed, [N, K] row-major, then a float32 multiplier qB): the values
** are copied into a new int8 / int16 parameter of shape [K, N] (row-major)
** with multiplier qB, which products take through the integer path (see
** mt_gemm_type); t stays with its owner.  Other raw items (CPU-specific
** intgemm layouts, FBGEMM packed, Bergamot codes, float64 ...):
** MT_ERR_UNSUPPORTED naming the item and its type.  MT_ERR_FORMAT for an
** intgemm item whose size, shape or multiplier is inconsistent. */
mt_status mt_params_adopt_item(mt_params *p, const char *name, mt_tensor *t,
                               const mt_model_item *item);

/* ------------------------------------------------ weights to intgemm items */

/* `mtpe convert --gemm-type` (engine/quantize.c), as marian-conv -g:
**   INT8 / INT16  every float32 item that is a 2-D weight by Marian's name
**                 rule (the name ends in "_W", or its first "_W" starts 3
**                 characters from the end: _Wq _Wo _W1 _Wt ...; never Wemb,
**                 biases or layer norms) becomes a generic intgemm8 /
**                 intgemm16 item: Marian's bytes (quantized W^T + qB), with
**                 qB = 127 / max|W| or 2^10 and kcpu's rounding; generic
**                 items of the other width are dequantized and requantized.
**   FLOAT32       generic intgemm items become float32 (value / qB).
** Other items are untouched (same bytes, same order).  *n_changed (may be
** NULL) receives the number of items converted.  MT_ERR_UNSUPPORTED for
** AUTO and for CPU-specific intgemm items when converting them; on failure
** m may be partly converted (callers discard it). */
mt_status mt_model_file_quantize(mt_model_file *m, mt_gemm_type type, int *n_changed);
/* True when name is a weight matrix by Marian's rule above. */
bool mt_marian_is_gemm_weight(const char *name);

/* ---------------------------------------------------------- model configs */

/* Minimal YAML document access (libyaml underneath) for model configs. */
typedef struct mt_yaml mt_yaml;
mt_status mt_yaml_parse(const char *text, mt_yaml **out);
void mt_yaml_free(mt_yaml *y);
/* Top-level mapping keys in document order. */
int mt_yaml_count(const mt_yaml *y);
const char *mt_yaml_key(const mt_yaml *y, int i);
/* Scalar value of a top-level key (NULL if absent or not a scalar). */
const char *mt_yaml_get(const mt_yaml *y, const char *key);
/* Sequence values: count and items (for keys like dim-vocabs). */
int mt_yaml_seq_len(const mt_yaml *y, const char *key);
const char *mt_yaml_seq_item(const mt_yaml *y, const char *key, int i);
/* mt_yaml details: parse errors are MT_ERR_FORMAT "YAML parse error at line
** L, column C: ..."; a document that is empty is an empty mapping; one whose
** top level is not a mapping is MT_ERR_FORMAT.  Values that are neither
** scalars nor sequences of scalars (nested mappings, aliases) are kept as
** keys with no value.  A repeated key replaces the earlier value.
** mt_yaml_seq_len returns -1 when key is absent or not a sequence of
** scalars; mt_yaml_seq_item returns NULL out of range. */

#ifdef __cplusplus
}
#endif
#endif /* MT_IO_H */
