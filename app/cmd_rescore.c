/*
** cmd_rescore.c: `mtpe rescore --weights NAME=W ... [--normalize ALPHA]
**                [-i NBEST] [-o OUT] [--n-best]`
**
** The last step of the right-to-left rescoring workflow (Marian ACL18
** §3.1.3; reference/marian-compat.md §6):
**
**   mtpe translate -m l2r.npz ... --n-best -i src > nbest
**   mtpe score -m r2l.npz ... --n-best --n-best-feature R2L -t src nbest > scored
**   mtpe rescore --weights F0=1 R2L=1 -i scored > best
**
** Each hypothesis gets the total sum_k w_k * feature_k over the features of
** its line; with --normalize ALPHA the total is divided by (words + 1)^ALPHA
** as the marian-examples recipe does, where words is the number of
** whitespace-separated tokens of the hypothesis text as it stands in the
** n-best file (the detokenised text: words, not subword pieces).  The output
** is the best hypothesis text of every sentence id (the first one of equal
** totals), one line per id from 0 to the largest id (missing ids give empty
** lines), or with --n-best every hypothesis line re-sorted by the new total
** (stable) with the total in its last field.
**
** Input: a Marian n-best list, one hypothesis per line, fields separated by
** " ||| " (bytes: space, three '|', space):
**
**   field 0         the sentence id, decimal, >= 0; ids never decrease
**   field 1         the hypothesis text (may be empty)
**   fields 2..n-3   optional (alignment, WordScores=), copied unchanged
**   field n-2       the features: "NAME= value" pairs separated by spaces
**                   ("NAME=value" is accepted too); values are decimal floats
**   field n-1       the score (replaced by the new total with --n-best)
**
** At least 4 fields.  A malformed line is an error naming the file and line.
** Features without a weight count with weight 0 (warned once per name); a
** weight naming a feature that a line lacks is an error.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "mt.h"
#include "options.h"

#define MAX_WEIGHTS 32
#define MAX_WARNED 32

static const app_opt rescore_opts[] = {
    {"weights", 0, APP_OPT_STRINGS, NULL, NULL,
     "feature weights NAME=W (e.g. F0=1 R2L=0.5); other features weigh 0"},
    {"normalize", 'n', APP_OPT_FLOAT, "0", "1",
     "divide the total by (words+1)^ALPHA, words = whitespace tokens of the text", "0..10"},
    {"input", 'i', APP_OPT_STRING, "stdin", NULL, "the n-best list (Marian format)"},
    {"output", 'o', APP_OPT_STRING, "stdout", NULL, "where the result goes"},
    {"n-best", 0, APP_OPT_FLAG, NULL, NULL,
     "print the whole n-best list re-sorted, the new total in the last field"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no warnings"},
};
static const int n_rescore_opts = (int)(sizeof rescore_opts / sizeof rescore_opts[0]);

typedef struct weight {
    char name[64];
    double w;
} weight;

typedef struct hyp {
    char *line;      /* the whole line (owned)                     */
    size_t text_off; /* the text: line[text_off .. text_off+len)   */
    size_t text_len;
    size_t last_off; /* start of the last field (the score)        */
    double total;
    int64_t order; /* position in the input, for a stable sort    */
} hyp;

typedef struct rescorer {
    weight weights[MAX_WEIGHTS];
    int n_weights;
    double alpha;
    bool n_best, quiet;
    const char *in_name;
    FILE *out;
    char warned[MAX_WARNED][64];
    int n_warned;
    hyp *hyps; /* the current sentence's hypotheses */
    int64_t n_hyps, cap_hyps;
    int64_t cur_id;   /* id of hyps, -1 before the first line          */
    int64_t next_out; /* next id whose line is due (1-best output)     */
} rescorer;

const app_cmd app_rescore_cmd = {
    .name = "rescore",
    .usage = "--weights NAME=W ... [-n ALPHA] [-i NBEST] [-o OUT]\n"
             "  [--n-best]",
    .about = "Picks the best hypothesis per sentence of a Marian n-best list by a weighted\n"
             "sum of its features: the last step of right-to-left rescoring,\n\n"
             "  mtpe translate -m L2R.npz -v V V --n-best -i src > nbest\n"
             "  mtpe score -m R2L.npz -v V V --n-best --n-best-feature R2L -t src nbest"
             " > scored\n"
             "  mtpe rescore --weights F0=1 R2L=1 -i scored > best\n\n"
             "There is no single-command pipeline: run the three steps.\n"
             "With -n ALPHA the total is divided by (words+1)^ALPHA, words being the\n"
             "whitespace-separated tokens of the detokenised hypothesis text.  Output:\n"
             "one best text per id 0..max id (empty line for a missing id), or with\n"
             "--n-best the lines re-sorted with the new total as the last field.\n",
    .opts = rescore_opts,
    .n_opts = n_rescore_opts,
};

static int fail(const char *msg) {
    fprintf(stderr, "mtpe rescore: %s\n", msg);
    return 1;
}

static mt_status parse_weights(rescorer *r, const app_opts *o) {
    int n = app_opts_count(o, "weights");
    if (n == 0) return mt_seterr(MT_ERR_INVALID, "--weights NAME=W ... is required");
    if (n > MAX_WEIGHTS) return mt_seterr(MT_ERR_INVALID, "at most %d --weights", MAX_WEIGHTS);
    for (int i = 0; i < n; i++) {
        const char *s = app_opts_item(o, "weights", i);
        const char *eq = strchr(s, '=');
        if (!eq || eq == s || (size_t)(eq - s) >= sizeof r->weights[0].name)
            return mt_seterr(MT_ERR_INVALID, "--weights: '%s' is not NAME=W", s);
        char *end;
        double w = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !isfinite(w))
            return mt_seterr(MT_ERR_INVALID, "--weights: '%s': W is not a number", s);
        weight *wt = &r->weights[r->n_weights];
        memcpy(wt->name, s, (size_t)(eq - s));
        wt->name[eq - s] = '\0';
        for (int k = 0; k < r->n_weights; k++)
            if (!strcmp(r->weights[k].name, wt->name))
                return mt_seterr(MT_ERR_INVALID, "--weights: %s given twice", wt->name);
        wt->w = w;
        r->n_weights++;
    }
    return MT_OK;
}

static void warn_unweighted(rescorer *r, const char *name, size_t len) {
    if (r->quiet || len >= sizeof r->warned[0]) return;
    for (int i = 0; i < r->n_warned; i++)
        if (strlen(r->warned[i]) == len && !memcmp(r->warned[i], name, len)) return;
    if (r->n_warned == MAX_WARNED) return;
    memcpy(r->warned[r->n_warned], name, len);
    r->warned[r->n_warned][len] = '\0';
    fprintf(stderr, "mtpe rescore: warning: feature %s has no weight (counts 0)\n",
            r->warned[r->n_warned]);
    r->n_warned++;
}

/* The total of the features in f[0..n) ("NAME= v NAME= v ..."). */
static mt_status feature_total(rescorer *r, const char *f, size_t n, int64_t lineno,
                               double *total) {
    bool seen[MAX_WEIGHTS] = {false};
    double sum = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && f[i] == ' ') i++;
        if (i == n) break;
        size_t start = i;
        while (i < n && f[i] != ' ' && f[i] != '=') i++;
        if (i == n || f[i] != '=' || i == start)
            return mt_seterr(MT_ERR_FORMAT, "%s:%lld: bad feature field (want 'NAME= value ...')",
                             r->in_name, (long long)lineno);
        size_t name_len = i - start;
        i++; /* '=' */
        while (i < n && f[i] == ' ') i++;
        char num[64];
        size_t vs = i;
        while (i < n && f[i] != ' ') i++;
        if (i == vs || i - vs >= sizeof num)
            return mt_seterr(MT_ERR_FORMAT, "%s:%lld: feature %.*s has no value", r->in_name,
                             (long long)lineno, (int)name_len, f + start);
        memcpy(num, f + vs, i - vs);
        num[i - vs] = '\0';
        char *end;
        double v = strtod(num, &end);
        if (*end)
            return mt_seterr(MT_ERR_FORMAT, "%s:%lld: feature %.*s: '%s' is not a number",
                             r->in_name, (long long)lineno, (int)name_len, f + start, num);
        int k = 0;
        while (k < r->n_weights && !(strlen(r->weights[k].name) == name_len &&
                                     !memcmp(r->weights[k].name, f + start, name_len)))
            k++;
        if (k == r->n_weights) {
            warn_unweighted(r, f + start, name_len);
        } else {
            seen[k] = true;
            sum += r->weights[k].w * v;
        }
    }
    for (int k = 0; k < r->n_weights; k++)
        if (!seen[k])
            return mt_seterr(MT_ERR_INVALID, "%s:%lld: no feature %s (named in --weights)",
                             r->in_name, (long long)lineno, r->weights[k].name);
    *total = sum;
    return MT_OK;
}

static int64_t count_words(const char *s, size_t n) {
    int64_t words = 0;
    bool in = false;
    for (size_t i = 0; i < n; i++) {
        bool sp = s[i] == ' ' || s[i] == '\t';
        if (!sp && !in) words++;
        in = !sp;
    }
    return words;
}

static int cmp_hyp(const void *a, const void *b) {
    const hyp *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static void clear_hyps(rescorer *r) {
    for (int64_t i = 0; i < r->n_hyps; i++) mt_free(r->hyps[i].line);
    r->n_hyps = 0;
}

/* Prints the current sentence (and empty lines for ids skipped before it). */
static void flush(rescorer *r) {
    if (r->cur_id < 0) return;
    if (r->n_best) {
        qsort(r->hyps, (size_t)r->n_hyps, sizeof r->hyps[0], cmp_hyp);
        for (int64_t i = 0; i < r->n_hyps; i++) {
            const hyp *h = &r->hyps[i];
            fprintf(r->out, "%.*s%g\n", (int)h->last_off, h->line, h->total);
        }
    } else {
        for (; r->next_out < r->cur_id; r->next_out++) fputc('\n', r->out);
        int64_t best = 0;
        for (int64_t i = 1; i < r->n_hyps; i++)
            if (r->hyps[i].total > r->hyps[best].total) best = i;
        const hyp *h = &r->hyps[best];
        fprintf(r->out, "%.*s\n", (int)h->text_len, h->line + h->text_off);
        r->next_out = r->cur_id + 1;
    }
    clear_hyps(r);
}

/* Parses one line (taking ownership of *line on success: *line = NULL). */
static mt_status add_line(rescorer *r, char **line, size_t len, int64_t lineno) {
    static const char sep[] = " ||| ";
    const size_t sl = sizeof sep - 1;
    char *s = *line;
    size_t starts[4096];
    int nf = 0;
    starts[nf++] = 0;
    for (char *p = s; (p = strstr(p, sep)) != NULL; p += sl) {
        if (nf == (int)(sizeof starts / sizeof starts[0])) break;
        starts[nf++] = (size_t)(p - s) + sl;
    }
    if (nf < 4)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s:%lld: not a Marian n-best line (want 'id ||| text ||| features "
                         "||| score', got %d field%s)",
                         r->in_name, (long long)lineno, nf, nf == 1 ? "" : "s");
    char *end;
    size_t id_len = starts[1] - sl;
    long long id = strtoll(s, &end, 10);
    if (id_len == 0 || (size_t)(end - s) != id_len || id < 0 || s[0] == '-' || s[0] == '+')
        return mt_seterr(MT_ERR_FORMAT, "%s:%lld: the id '%.*s' is not a number >= 0",
                         r->in_name, (long long)lineno, (int)id_len, s);
    if (id < r->cur_id)
        return mt_seterr(MT_ERR_FORMAT, "%s:%lld: id %lld after id %lld (ids must not decrease)",
                         r->in_name, (long long)lineno, id, (long long)r->cur_id);
    size_t fs = starts[nf - 2], fe = starts[nf - 1] - sl;
    double total = 0;
    mt_status rc = feature_total(r, s + fs, fe - fs, lineno, &total);
    if (rc != MT_OK) return rc;
    size_t ts = starts[1], te = starts[2] - sl;
    if (r->alpha != 0) total /= pow((double)(count_words(s + ts, te - ts) + 1), r->alpha);
    /* the old score must be a number too: the line is Marian's */
    (void)strtod(s + starts[nf - 1], &end);
    if (end == s + starts[nf - 1] || (size_t)(end - s) != len)
        return mt_seterr(MT_ERR_FORMAT, "%s:%lld: the last field is not a score", r->in_name,
                         (long long)lineno);
    if (id != r->cur_id) flush(r);
    r->cur_id = id;
    if (r->n_hyps == r->cap_hyps) {
        int64_t cap = r->cap_hyps ? 2 * r->cap_hyps : 16;
        hyp *nh = mt_try_malloc((size_t)cap * sizeof *nh);
        if (!nh) return mt_seterr(MT_ERR_NOMEM, "rescore: out of memory");
        if (r->n_hyps) memcpy(nh, r->hyps, (size_t)r->n_hyps * sizeof *nh);
        mt_free(r->hyps);
        r->hyps = nh;
        r->cap_hyps = cap;
    }
    hyp *h = &r->hyps[r->n_hyps];
    h->line = s;
    h->text_off = ts;
    h->text_len = te - ts;
    h->last_off = starts[nf - 1];
    h->total = total;
    h->order = r->n_hyps;
    r->n_hyps++;
    *line = NULL;
    return MT_OK;
}

static int run(rescorer *r, app_opts *o) {
    int ret = 1;
    FILE *in = NULL, *out = NULL;
    char *buf = NULL, *line = NULL;
    size_t cap = 0;
    const char *op = app_opts_str(o, "output");
    if (parse_weights(r, o) != MT_OK) {
        fprintf(stderr, "mtpe rescore: %s\n", mt_errmsg());
        return 2;
    }
    r->alpha = app_opts_float(o, "normalize");
    r->n_best = app_opts_flag(o, "n-best");
    r->quiet = app_opts_flag(o, "quiet");
    r->cur_id = -1;
    const char *ip = app_opts_str(o, "input");
    bool std_in = !strcmp(ip, "stdin") || !strcmp(ip, "-");
    r->in_name = std_in ? "stdin" : ip;
    in = std_in ? stdin : fopen(ip, "rb");
    if (!in) {
        fprintf(stderr, "mtpe rescore: cannot open %s\n", ip);
        goto done;
    }
    bool std_out = !strcmp(op, "stdout") || !strcmp(op, "-");
    out = std_out ? stdout : fopen(op, "w");
    if (!out) {
        fprintf(stderr, "mtpe rescore: cannot write %s\n", op);
        goto done;
    }
    r->out = out;
    int64_t lineno = 0;
    ssize_t n;
    while ((n = app_read_line(in, &buf, &cap)) >= 0) {
        lineno++;
        line = mt_try_malloc((size_t)n + 1);
        if (!line) {
            fail("out of memory");
            goto done;
        }
        memcpy(line, buf, (size_t)n + 1);
        if (add_line(r, &line, (size_t)n, lineno) != MT_OK) {
            fail(mt_errmsg());
            goto done;
        }
    }
    if (ferror(in)) {
        fprintf(stderr, "mtpe rescore: read error on %s\n", r->in_name);
        goto done;
    }
    flush(r);
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "mtpe rescore: write error on %s\n", op);
        goto done;
    }
    ret = 0;
done:
    clear_hyps(r);
    mt_free(r->hyps);
    mt_free(line);
    free(buf); /* getline's buffer */
    if (in && in != stdin) fclose(in);
    if (out && out != stdout && fclose(out) != 0 && ret == 0) {
        fprintf(stderr, "mtpe rescore: write error on %s\n", op);
        ret = 1;
    }
    return ret;
}

int app_rescore_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_rescore_cmd, argc, argv, &o, &ret)) return ret;
    rescorer r;
    memset(&r, 0, sizeof r);
    ret = run(&r, o);
    app_opts_free(o);
    return ret;
}
