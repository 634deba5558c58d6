/*
** cmd_convert.c: `mtpe convert`, the counterpart of marian-conv.
**
**   mtpe convert --info MODEL     the config (special:model.yml) and one line
**                                 per parameter: name, shape, type; totals
**   mtpe convert MODEL OUT        convert by suffix: npz -> bin, bin -> npz,
**   mtpe convert -f MODEL -t OUT  npz -> npz, bin -> bin
**   -g, --gemm-type TYPE          int8 | int16: weight matrices become
**                                 Marian's generic intgemm8 / intgemm16
**                                 items (marian-conv -g intgemm8|16);
**                                 float32: such items back to float32
**                                 (mt_model_file_quantize, engine/quantize.c)
*/
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "mt.h"
#include "options.h"

static const app_opt conv_opts[] = {
    {"from", 'f', APP_OPT_STRING, NULL, NULL, "input model (.npz or .bin); or MODEL"},
    {"to", 't', APP_OPT_STRING, NULL, NULL, "output model (.npz or .bin); or OUT"},
    {"info", 'i', APP_OPT_FLAG, NULL, NULL,
     "print the model config and one line per parameter (name, shape, type), then the totals"},
    {"gemm-type", 'g', APP_OPT_STRING, NULL, NULL,
     "int8 | int16: store the weight matrices (names ending in _W or _W?, e.g. _Wq _W1 _Wt) as "
     "Marian's intgemm8 / intgemm16 items, as marian-conv -g does (.bin output only); float32: "
     "turn such items back into float32 (default: keep every item as it is)",
     "float32|int16|int8"},
};

const app_cmd app_convert_cmd = {
    .name = "convert",
    .usage = "[options] MODEL OUT\n"
             "[options] -f MODEL -t OUT\n"
             "--info MODEL",
    .about = "Converts a Marian model between .npz and .bin (formats chosen by the file\n"
             "suffixes; the output is written to OUT.tmp and renamed), or describes it.\n"
             "Quantized items (intgemm8/16, packed) exist only in .bin files; converting\n"
             "such a model to .npz is refused.\n",
    .opts = conv_opts,
    .n_opts = (int)(sizeof conv_opts / sizeof conv_opts[0]),
    .args = "MODEL [OUT]",
    .min_args = 0,
    .max_args = 2,
};

static void shape_text(const mt_shape *s, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

static int64_t numel(const mt_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->dim[i];
    return n;
}

static int print_info(const char *path) {
    mt_model_file *m = NULL;
    if (mt_model_file_read(path, &m) != MT_OK) {
        fprintf(stderr, "mtpe convert: %s\n", mt_errmsg());
        return 1;
    }
    if (m->config_yaml) {
        size_t len = strlen(m->config_yaml);
        printf("# config (special:model.yml)\n%s%s", m->config_yaml,
               len && m->config_yaml[len - 1] != '\n' ? "\n" : "");
    } else {
        printf("# no config (special:model.yml) in this file\n");
    }
    int width = 4;
    for (int i = 0; i < m->n; i++) {
        int w = (int)strlen(m->names[i]);
        if (w > width) width = w;
    }
    printf("# parameters: name, shape, type\n");
    int64_t elements = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < m->n; i++) {
        const mt_tensor *t = &m->tensors[i];
        const mt_model_item *it = &m->items[i];
        char sh[128];
        shape_text(&t->shape, sh, sizeof sh);
        const char *type = mt_marian_type_name(it->marian_type);
        printf("%-*s  %-14s  %s\n", width, m->names[i], sh, type ? type : "?");
        elements += numel(&t->shape);
        bytes += it->raw ? it->raw_bytes
                         : (uint64_t)numel(&t->shape) * mt_marian_type_width(it->marian_type);
    }
    printf("# total: %d parameters, %lld elements, %llu bytes\n", m->n, (long long)elements,
           (unsigned long long)bytes);
    mt_model_file_free(m);
    return 0;
}

static int convert(const char *from, const char *to, const char *gemm_type) {
    mt_gemm_type gt = MT_GEMM_FLOAT32;
    if (gemm_type && (mt_gemm_type_parse(gemm_type, &gt) != MT_OK || gt == MT_GEMM_AUTO)) {
        fprintf(stderr, "mtpe convert: --gemm-type %s: use float32, int16 or int8\n", gemm_type);
        return 2;
    }
    mt_model_file *m = NULL;
    if (mt_model_file_read(from, &m) != MT_OK) {
        fprintf(stderr, "mtpe convert: %s\n", mt_errmsg());
        return 1;
    }
    int rc = 0, changed = 0;
    if (gemm_type && mt_model_file_quantize(m, gt, &changed) != MT_OK) {
        fprintf(stderr, "mtpe convert: %s: %s\n", from, mt_errmsg());
        rc = 1;
    } else if (mt_model_file_write(to, m) != MT_OK) {
        fprintf(stderr, "mtpe convert: %s\n", mt_errmsg());
        rc = 1;
    } else {
        fprintf(stderr, "mtpe convert: wrote %s (%d parameters%s", to, m->n,
                m->config_yaml ? " + config" : "");
        if (gemm_type) fprintf(stderr, "; %d converted to %s", changed, mt_gemm_type_name(gt));
        fprintf(stderr, ")\n");
    }
    mt_model_file_free(m);
    return rc;
}

int app_convert_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_convert_cmd, argc, argv, &o, &ret)) return ret;
    const char *from = app_opts_given(o, "from") ? app_opts_str(o, "from") : NULL;
    const char *to = app_opts_given(o, "to") ? app_opts_str(o, "to") : NULL;
    const char *gemm_type = app_opts_given(o, "gemm-type") ? app_opts_str(o, "gemm-type") : NULL;
    bool info = app_opts_flag(o, "info");
    int p = 0, n_pos = app_opts_nargs(o);
    if (from == NULL && p < n_pos) from = app_opts_arg(o, p++);
    if (to == NULL && !info && p < n_pos) to = app_opts_arg(o, p++);
    if (p != n_pos || from == NULL || (info ? to != NULL : to == NULL)) {
        ret = app_cmd_usage_error(&app_convert_cmd, info ? "--info takes one MODEL"
                                                         : "give MODEL and OUT (or -f and -t)");
    } else {
        ret = info ? print_info(from) : convert(from, to, gemm_type);
    }
    app_opts_free(o);
    return ret;
}
