/*
** test_align.c: the fast_align-style aligner and the atools heuristics
** (app/align/align.h).
**
**   - a synthetic parallel corpus from a mini-language with a known bijective
**     dictionary and local reorderings: alignment error rate against the known
**     links, forward, reverse and symmetrized
**   - EM on a tiny corpus against hand-computed IBM Model 1 tables, and the
**     hash-based trainer against a plain dense re-computation
**   - the log-likelihood never decreases from one EM pass to the next
**   - tension optimization moves towards the data (monotone vs scrambled)
**   - symmetrization heuristics on hand-made grids
**   - Pharaoh parsing, corpus reading, allocation failures
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align.h"
#include "harness.h"
#include "mt.h"

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}
static double rnd01(void) { return (rnd() & 0xffffff) / 16777216.0; }

static void silent(mt_log_level level, const char *msg, void *user) {
    (void)level, (void)msg, (void)user;
}

/* Synthetic corpus: nsent pairs; gold[s] lists the true links of pair s. */
typedef struct synth {
    app_bitext *bt;
    app_link **gold;
    int64_t *n_gold;
    int64_t n;
} synth;

/* Mini-language: source word k ("s<k>") translates to target word perm[k]
** ("t<perm[k]>"); frequencies Zipf-like.  Target order: the source order with
** adjacent pairs swapped with probability swap_p (non-overlapping); with
** scramble, the target is a random permutation of the translations. */
static void make_synth(synth *sy, int64_t nsent, int vocab, double swap_p, bool scramble) {
    int *perm = malloc(sizeof(int) * (size_t)vocab);
    double *cdf = malloc(sizeof(double) * (size_t)vocab);
    for (int k = 0; k < vocab; k++)
        perm[k] = k;
    for (int k = vocab - 1; k > 0; k--) {
        int j = (int)(rnd() % (uint32_t)(k + 1));
        int t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    double z = 0;
    for (int k = 0; k < vocab; k++)
        z += 1.0 / (k + 5.0);
    double acc = 0;
    for (int k = 0; k < vocab; k++) {
        acc += 1.0 / (k + 5.0) / z;
        cdf[k] = acc;
    }
    CHECK_STATUS(app_bitext_init(&sy->bt));
    sy->n = nsent;
    sy->gold = calloc((size_t)nsent, sizeof *sy->gold);
    sy->n_gold = calloc((size_t)nsent, sizeof *sy->n_gold);
    char src[1024], trg[1024];
    for (int64_t s = 0; s < nsent; s++) {
        int len = 4 + (int)(rnd() % 11);
        int words[16], order[16];
        for (int i = 0; i < len; i++) {
            double u = rnd01();
            int k = 0;
            while (k < vocab - 1 && cdf[k] < u)
                k++;
            words[i] = k;
            order[i] = i; /* target position p holds source word order[p] */
        }
        if (scramble) {
            for (int i = len - 1; i > 0; i--) {
                int j = (int)(rnd() % (uint32_t)(i + 1));
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
        } else {
            for (int i = 0; i + 1 < len; i++) {
                if (rnd01() < swap_p) {
                    int t = order[i];
                    order[i] = order[i + 1];
                    order[i + 1] = t;
                    i++;
                }
            }
        }
        size_t ps = 0, pt = 0;
        for (int i = 0; i < len; i++)
            ps += (size_t)snprintf(src + ps, sizeof src - ps, "%ss%d", i ? " " : "", words[i]);
        sy->gold[s] = malloc(sizeof(app_link) * (size_t)len);
        for (int p = 0; p < len; p++) {
            pt += (size_t)snprintf(trg + pt, sizeof trg - pt, "%st%d", p ? " " : "",
                                   perm[words[order[p]]]);
            sy->gold[s][p].src = order[p];
            sy->gold[s][p].trg = p;
        }
        sy->n_gold[s] = len;
        CHECK_STATUS(app_bitext_add(sy->bt, src, ps, trg, pt, s + 1));
    }
    free(perm);
    free(cdf);
}

static void free_synth(synth *sy) {
    for (int64_t s = 0; s < sy->n; s++)
        free(sy->gold[s]);
    free(sy->gold);
    free(sy->n_gold);
    app_bitext_free(sy->bt);
}

/* AER with sure = possible = gold: 1 - 2|A & G| / (|A| + |G|). */
static double aer(const synth *sy, const app_alignment *al) {
    int64_t hit = 0, na = 0, ng = 0;
    for (int64_t s = 0; s < sy->n; s++) {
        ng += sy->n_gold[s];
        for (int64_t k = al->off[s]; k < al->off[s + 1]; k++) {
            na++;
            for (int64_t g = 0; g < sy->n_gold[s]; g++)
                if (sy->gold[s][g].src == al->links[k].src &&
                    sy->gold[s][g].trg == al->links[k].trg) {
                    hit++;
                    break;
                }
        }
    }
    return 1.0 - 2.0 * (double)hit / (double)(na + ng);
}

/* ------------------------------------------------------- synthetic AER */

static void test_synthetic_aer(void) {
    synth sy;
    make_synth(&sy, 3000, 300, 0.3, false);
    app_align_params p = app_align_default_params();
    p.favor_diagonal = p.optimize_tension = p.variational_bayes = true;

    app_alignment *fwd = NULL, *rev = NULL, *sym = NULL, *inter = NULL;
    app_align_report rep = {0};
    CHECK_STATUS(app_align_run(sy.bt, &p, &fwd, NULL, &rep));
    p.reverse = true;
    CHECK_STATUS(app_align_run(sy.bt, &p, &rev, NULL, NULL));
    if (!fwd || !rev) return;
    double a_f = aer(&sy, fwd), a_r = aer(&sy, rev);
    CHECK(a_f < 0.03, "forward AER %.4f", a_f);
    CHECK(a_r < 0.03, "reverse AER %.4f", a_r);
    /* reverse links come out in source-target orientation, one per source word */
    int64_t bad = 0;
    for (int64_t s = 0; s < sy.n; s++) {
        int32_t ns = (int32_t)(sy.bt->src_off[s + 1] - sy.bt->src_off[s]);
        for (int64_t k = rev->off[s]; k < rev->off[s + 1]; k++)
            if (rev->links[k].src >= ns ||
                (k > rev->off[s] && rev->links[k].src <= rev->links[k - 1].src))
                bad++;
    }
    CHECK(bad == 0, "%lld reverse links out of source order", (long long)bad);

    CHECK_STATUS(app_alignment_symmetrize(sy.bt, fwd, rev, APP_SYM_GROW_DIAG_FINAL_AND, &sym));
    CHECK_STATUS(app_alignment_symmetrize(sy.bt, fwd, rev, APP_SYM_INTERSECT, &inter));
    if (sym && inter) {
        double a_s = aer(&sy, sym);
        CHECK(a_s < 0.03, "grow-diag-final-and AER %.4f", a_s);
        CHECK(a_s <= a_f + 0.01 && a_s <= a_r + 0.01, "symmetrized %.4f vs %.4f / %.4f", a_s, a_f,
              a_r);
        /* precision of the intersection */
        int64_t hit = 0;
        for (int64_t s = 0; s < sy.n; s++)
            for (int64_t k = inter->off[s]; k < inter->off[s + 1]; k++)
                for (int64_t g = 0; g < sy.n_gold[s]; g++)
                    if (sy.gold[s][g].src == inter->links[k].src &&
                        sy.gold[s][g].trg == inter->links[k].trg)
                        hit++;
        double prec = (double)hit / (double)inter->off[inter->n];
        CHECK(prec > 0.97, "intersection precision %.4f", prec);
        fprintf(stderr, "synthetic AER: forward %.4f reverse %.4f gdfa %.4f (tension %.2f)\n", a_f,
                a_r, a_s, rep.tension);
    }
    /* the prior alone (one pass: t uniform) is far worse: the test can fail */
    app_alignment *prior_only = NULL;
    app_align_params p1 = app_align_default_params();
    p1.favor_diagonal = true;
    p1.iterations = 1;
    CHECK_STATUS(app_align_run(sy.bt, &p1, &prior_only, NULL, NULL));
    if (prior_only) CHECK(aer(&sy, prior_only) > 0.2, "prior-only AER %.4f", aer(&sy, prior_only));

    /* plain IBM Model 1 still learns the dictionary */
    app_alignment *m1 = NULL;
    app_align_params pm = app_align_default_params();
    CHECK_STATUS(app_align_run(sy.bt, &pm, &m1, NULL, NULL));
    if (m1) CHECK(aer(&sy, m1) < 0.2, "model 1 AER %.4f", aer(&sy, m1));

    app_alignment_free(fwd);
    app_alignment_free(rev);
    app_alignment_free(sym);
    app_alignment_free(inter);
    app_alignment_free(prior_only);
    app_alignment_free(m1);
    free_synth(&sy);
}

/* ------------------------------------------------------- likelihood / EM */

static void test_loglik_increases(void) {
    synth sy;
    make_synth(&sy, 800, 120, 0.3, false);
    for (int variant = 0; variant < 4; variant++) {
        app_align_params p = app_align_default_params();
        p.iterations = 8;
        p.favor_diagonal = variant & 1;
        p.reverse = (variant & 2) != 0;
        double ll[8];
        app_align_report rep = {ll, 0, 0};
        app_alignment *al = NULL;
        CHECK_STATUS(app_align_run(sy.bt, &p, &al, NULL, &rep));
        for (int k = 0; k + 1 < p.iterations; k++)
            CHECK(ll[k + 1] >= ll[k] - 1e-9 * fabs(ll[k]), "variant %d pass %d: %.6f -> %.6f",
                  variant, k, ll[k], ll[k + 1]);
        CHECK(ll[p.iterations - 1] > ll[0] + 1.0, "variant %d: no progress", variant);
        app_alignment_free(al);
    }
    free_synth(&sy);
}

/* Tension optimization: monotone data pulls lambda up, scrambled data down. */
static void test_tension(void) {
    synth mono, scr;
    make_synth(&mono, 800, 100, 0.0, false);
    make_synth(&scr, 800, 100, 0.0, true);
    app_align_params p = app_align_default_params();
    p.favor_diagonal = p.optimize_tension = true;
    app_align_report r1 = {0}, r2 = {0};
    app_alignment *a1 = NULL, *a2 = NULL;
    CHECK_STATUS(app_align_run(mono.bt, &p, &a1, NULL, &r1));
    CHECK_STATUS(app_align_run(scr.bt, &p, &a2, NULL, &r2));
    CHECK(r1.tension > 6.0, "monotone corpus: tension %.3f", r1.tension);
    CHECK(r2.tension < 2.0, "scrambled corpus: tension %.3f", r2.tension);
    /* without -o the tension stays */
    app_align_params q = app_align_default_params();
    q.favor_diagonal = true;
    app_align_report r3 = {0};
    app_alignment *a3 = NULL;
    CHECK_STATUS(app_align_run(scr.bt, &q, &a3, NULL, &r3));
    CHECK_CLOSE(r3.tension, 4.0, 0, 0, "tension without -o");
    app_alignment_free(a1);
    app_alignment_free(a2);
    app_alignment_free(a3);
    free_synth(&mono);
    free_synth(&scr);
}

/* Hand-computed IBM Model 1 (no NULL): corpus "a b ||| x y", "a ||| x".
** Pass 1 (uniform t): c(a,x) = 1/2 + 1, c(a,y) = 1/2, c(b,x) = c(b,y) = 1/2, so
** t(x|a) = 3/4, t(y|a) = 1/4, t(x|b) = t(y|b) = 1/2.  Final pass Viterbi of pair 1:
** x -> a (3/8 > 1/4), y -> b (1/4 < 1/2): "0-0 1-1". */
static void test_hand_model1(void) {
    app_bitext *bt = NULL;
    CHECK_STATUS(app_bitext_init(&bt));
    CHECK_STATUS(app_bitext_add(bt, "a b", 3, "x y", 3, 1));
    CHECK_STATUS(app_bitext_add(bt, "a", 1, "x", 1, 2));
    app_align_params p = app_align_default_params();
    p.no_null = true;
    p.iterations = 2;
    app_alignment *al = NULL;
    app_align_model *m = NULL;
    double ll[2];
    app_align_report rep = {ll, 0, 0};
    CHECK_STATUS(app_align_run(bt, &p, &al, &m, &rep));
    if (!al || !m) return;
    int32_t a = app_interner_find(bt->vocab, "a", 1), b = app_interner_find(bt->vocab, "b", 1);
    int32_t x = app_interner_find(bt->vocab, "x", 1), y = app_interner_find(bt->vocab, "y", 1);
    CHECK_CLOSE(app_align_model_prob(m, a, x), 0.75, 1e-12, 0, "t(x|a)");
    CHECK_CLOSE(app_align_model_prob(m, a, y), 0.25, 1e-12, 0, "t(y|a)");
    CHECK_CLOSE(app_align_model_prob(m, b, x), 0.5, 1e-12, 0, "t(x|b)");
    CHECK_CLOSE(app_align_model_prob(m, b, y), 0.5, 1e-12, 0, "t(y|b)");
    CHECK_CLOSE(app_align_model_prob(m, b, b), 0.0, 0, 0, "never co-occurring");
    /* pass 1: t = 1/2 (two target types), p(a) = 1/n: each token has likelihood 1/2 */
    CHECK_CLOSE(ll[0], 3 * log(0.5), 1e-12, 0, "first pass log-likelihood");
    /* pass 2: x in pair 1: (3/4 + 1/2)/2, y: (1/4 + 1/2)/2, x in pair 2: 3/4 */
    CHECK_CLOSE(ll[1], log(0.625) + log(0.375) + log(0.75), 1e-12, 0, "second pass");
    CHECK(al->off[1] == 2 && al->links[0].src == 0 && al->links[0].trg == 0 &&
              al->links[1].src == 1 && al->links[1].trg == 1,
          "Viterbi of pair 1");
    CHECK(al->off[2] - al->off[1] == 1 && al->links[2].src == 0 && al->links[2].trg == 0,
          "Viterbi of pair 2");
    app_align_model_free(m);
    app_alignment_free(al);
    app_bitext_free(bt);
}

/* Plain dense re-computation of the same EM (vocab small enough for V x V tables)
** against the hash-based trainer: tables, likelihoods, final tension, links. */
static void dense_em(const app_bitext *bt, const app_align_params *p, double *t_out, double *ll,
                     app_link *links, int64_t *n_links) {
    int V = app_interner_size(bt->vocab);
    int E = V + 1; /* row 0 = NULL */
    double *t = calloc((size_t)E * V, sizeof *t), *c = calloc((size_t)E * V, sizeof *c);
    unsigned char *co = calloc((size_t)E * V, 1);
    int use_null = !p->no_null;
    double lambda = p->tension;
    int nf = 0;
    unsigned char *fseen = calloc((size_t)V, 1);
    for (int64_t s = 0; s < bt->n; s++) {
        const int32_t *src = bt->src_tok + bt->src_off[s], *trg = bt->trg_tok + bt->trg_off[s];
        int ns = (int)(bt->src_off[s + 1] - bt->src_off[s]);
        int nt = (int)(bt->trg_off[s + 1] - bt->trg_off[s]);
        const int32_t *e = p->reverse ? trg : src, *f = p->reverse ? src : trg;
        int n = p->reverse ? nt : ns, m = p->reverse ? ns : nt;
        for (int j = 0; j < m; j++) {
            if (!fseen[f[j]]) fseen[f[j]] = 1, nf++;
            if (use_null) co[f[j]] = 1;
            for (int i = 0; i < n; i++)
                co[(size_t)(e[i] + 1) * V + f[j]] = 1;
        }
    }
    for (size_t k = 0; k < (size_t)E * V; k++)
        t[k] = co[k] ? 1.0 / nf : 0.0;
    *n_links = 0;
    for (int it = 0; it < p->iterations; it++) {
        int final = it == p->iterations - 1;
        double loglik = 0, emp = 0, toks = 0;
        memset(c, 0, sizeof(double) * (size_t)E * V);
        /* per (m, n, j) non-NULL mass, dense over lengths up to 16 */
        static double w[17][17][17];
        memset(w, 0, sizeof w);
        for (int64_t s = 0; s < bt->n; s++) {
            const int32_t *src = bt->src_tok + bt->src_off[s], *trg = bt->trg_tok + bt->trg_off[s];
            int ns = (int)(bt->src_off[s + 1] - bt->src_off[s]);
            int nt = (int)(bt->trg_off[s + 1] - bt->trg_off[s]);
            const int32_t *e = p->reverse ? trg : src, *f = p->reverse ? src : trg;
            int n = p->reverse ? nt : ns, m = p->reverse ? ns : nt;
            toks += m;
            for (int j = 0; j < m; j++) {
                double pr[17], z = 0;
                for (int i = 1; i <= n; i++) {
                    pr[i] = exp(-lambda * fabs((double)i / n - (double)(j + 1) / m));
                    z += pr[i];
                }
                double prob[17], sum = 0;
                for (int i = use_null ? 0 : 1; i <= n; i++) {
                    double prior = !p->favor_diagonal ? 1.0 / (n + use_null)
                                   : i == 0           ? p->p0
                                                      : (1 - (use_null ? p->p0 : 0)) * pr[i] / z;
                    prob[i] = t[(size_t)(i ? e[i - 1] + 1 : 0) * V + f[j]] * prior;
                    sum += prob[i];
                }
                loglik += log(sum);
                if (final) {
                    int best = use_null ? 0 : 1;
                    for (int i = best + 1; i <= n; i++)
                        if (prob[i] > prob[best]) best = i;
                    if (best > 0) {
                        links[*n_links].src = p->reverse ? j : best - 1;
                        links[*n_links].trg = p->reverse ? best - 1 : j;
                        (*n_links)++;
                    }
                    continue;
                }
                double post0 = use_null ? prob[0] / sum : 0;
                for (int i = use_null ? 0 : 1; i <= n; i++) {
                    c[(size_t)(i ? e[i - 1] + 1 : 0) * V + f[j]] += prob[i] / sum;
                    if (i) emp += prob[i] / sum * -fabs((double)i / n - (double)(j + 1) / m);
                }
                w[m][n][j + 1] += 1 - post0;
            }
        }
        ll[it] = loglik;
        if (final) break;
        if (p->favor_diagonal && p->optimize_tension && it > 0) {
            for (int step = 0; step < 8; step++) {
                double mod = 0;
                for (int m = 1; m <= 16; m++)
                    for (int n = 1; n <= 16; n++)
                        for (int j = 1; j <= m; j++) {
                            if (w[m][n][j] == 0) continue;
                            double z = 0, sh = 0;
                            for (int i = 1; i <= n; i++) {
                                double h = -fabs((double)i / n - (double)j / m);
                                z += exp(lambda * h);
                                sh += h * exp(lambda * h);
                            }
                            mod += w[m][n][j] * sh / z;
                        }
                lambda += (emp - mod) / toks * 20;
                lambda = lambda < 0.1 ? 0.1 : lambda > 14 ? 14 : lambda;
            }
        }
        for (int ei = 0; ei < E; ei++) {
            double tot = 0;
            for (int fi = 0; fi < V; fi++)
                if (co[(size_t)ei * V + fi])
                    tot += c[(size_t)ei * V + fi] + (p->variational_bayes ? p->alpha : 0.0);
            if (tot == 0) tot = 1;
            for (int fi = 0; fi < V; fi++) {
                size_t k = (size_t)ei * V + fi;
                if (!co[k]) continue;
                if (p->variational_bayes) {
                    /* digamma by the integral-free recurrence + series, independently */
                    double x1 = c[k] + p->alpha, x2 = tot, d1 = 0, d2 = 0;
                    while (x1 < 20)
                        d1 -= 1 / x1, x1 += 1;
                    while (x2 < 20)
                        d2 -= 1 / x2, x2 += 1;
                    d1 += log(x1) - 1 / (2 * x1) - 1 / (12 * x1 * x1) + 1 / (120 * pow(x1, 4));
                    d2 += log(x2) - 1 / (2 * x2) - 1 / (12 * x2 * x2) + 1 / (120 * pow(x2, 4));
                    t[k] = exp(d1 - d2);
                } else {
                    t[k] = c[k] / tot;
                }
            }
        }
    }
    memcpy(t_out, t, sizeof(double) * (size_t)E * V);
    free(t);
    free(c);
    free(co);
    free(fseen);
}

static void test_against_dense(void) {
    synth sy;
    make_synth(&sy, 150, 25, 0.3, false);
    int V = app_interner_size(sy.bt->vocab);
    for (int round = 0; round < 12; round++) {
        int variant = round % 6;
        app_align_params p = app_align_default_params();
        if (round >= 6) p.cache_bytes = -1; /* no index cache, no prior table */
        p.favor_diagonal = variant != 0;
        p.optimize_tension = variant >= 2;
        p.variational_bayes = variant >= 3;
        p.reverse = variant == 4;
        p.no_null = variant == 5;
        double *t = malloc(sizeof(double) * (size_t)(V + 1) * V);
        app_link *links = malloc(sizeof(app_link) * 4000);
        double ll_ref[5], ll[5];
        int64_t nl = 0;
        dense_em(sy.bt, &p, t, ll_ref, links, &nl);
        app_alignment *al = NULL;
        app_align_model *m = NULL;
        app_align_report rep = {ll, 0, 0};
        CHECK_STATUS(app_align_run(sy.bt, &p, &al, &m, &rep));
        for (int k = 0; al && m && k < 5; k++)
            CHECK_CLOSE(ll[k], ll_ref[k], 1e-9, 1e-9, "round %d pass %d log-likelihood", round, k);
        int bad = 0;
        for (int e = -1; m && e < V; e++)
            for (int f = 0; f < V; f++)
                if (!th_close(app_align_model_prob(m, e, f), t[(size_t)(e + 1) * V + f], 1e-12,
                              1e-8))
                    bad++;
        CHECK(bad == 0, "round %d: %d table entries differ", round, bad);
        bool same = al && al->off[al->n] == nl;
        for (int64_t k = 0; same && k < nl; k++)
            same = al->links[k].src == links[k].src && al->links[k].trg == links[k].trg;
        CHECK(same, "round %d: Viterbi links differ from the dense computation", round);
        app_align_model_free(m);
        app_alignment_free(al);
        free(t);
        free(links);
    }
    free_synth(&sy);
}

/* ------------------------------------------------------- symmetrization */

static bool links_equal(const app_link *got, int64_t n, const int *want, int64_t nw) {
    if (n != nw) return false;
    for (int64_t k = 0; k < n; k++)
        if (got[k].src != want[2 * k] || got[k].trg != want[2 * k + 1]) return false;
    return true;
}

static void test_symmetrize(void) {
    app_link out[64];
    int64_t n;
    /* a = {0-0, 1-2, 2-1}, b = {0-0, 1-1, 2-2}.  grow-diag from {0-0}: 1-1 (diagonal
    ** neighbour of 0-0, source 1 unaligned), then 1-2 (target 2 unaligned, next to
    ** 1-1), 2-1 (source 2 unaligned); 2-2 has both words aligned by then. */
    app_link a1[] = {{0, 0}, {1, 2}, {2, 1}}, b1[] = {{0, 0}, {1, 1}, {2, 2}};
    const int gd1[] = {0, 0, 1, 1, 1, 2, 2, 1};
    for (app_sym m = APP_SYM_GROW_DIAG; m <= APP_SYM_GROW_DIAG_FINAL_AND; m++) {
        CHECK_STATUS(app_symmetrize(3, 3, a1, 3, b1, 3, m, out, &n));
        CHECK(links_equal(out, n, gd1, 4), "example 1, method %d: %lld links", (int)m,
              (long long)n);
    }
    CHECK_STATUS(app_symmetrize(3, 3, a1, 3, b1, 3, APP_SYM_INTERSECT, out, &n));
    CHECK(n == 1 && out[0].src == 0 && out[0].trg == 0, "intersection");
    CHECK_STATUS(app_symmetrize(3, 3, a1, 3, b1, 3, APP_SYM_UNION, out, &n));
    const int un1[] = {0, 0, 1, 1, 1, 2, 2, 1, 2, 2};
    CHECK(links_equal(out, n, un1, 5), "union");

    /* a = {0-0, 3-3}, b = {0-0, 2-3}: nothing grows; final-and takes 3-3 from a
    ** (both words free) and then refuses 2-3 (target 3 taken); final takes both. */
    app_link a2[] = {{0, 0}, {3, 3}}, b2[] = {{0, 0}, {2, 3}};
    CHECK_STATUS(app_symmetrize(4, 4, a2, 2, b2, 2, APP_SYM_GROW_DIAG, out, &n));
    CHECK(n == 1, "example 2 grow-diag: %lld links", (long long)n);
    CHECK_STATUS(app_symmetrize(4, 4, a2, 2, b2, 2, APP_SYM_GROW_DIAG_FINAL_AND, out, &n));
    const int gdfa2[] = {0, 0, 3, 3};
    CHECK(links_equal(out, n, gdfa2, 2), "example 2 grow-diag-final-and");
    CHECK_STATUS(app_symmetrize(4, 4, a2, 2, b2, 2, APP_SYM_GROW_DIAG_FINAL, out, &n));
    const int gdf2[] = {0, 0, 2, 3, 3, 3};
    CHECK(links_equal(out, n, gdf2, 3), "example 2 grow-diag-final");
    /* the order of the operands matters for final-and: b first takes 2-3 */
    CHECK_STATUS(app_symmetrize(4, 4, b2, 2, a2, 2, APP_SYM_GROW_DIAG_FINAL_AND, out, &n));
    const int gdfa2r[] = {0, 0, 2, 3};
    CHECK(links_equal(out, n, gdfa2r, 2), "example 2 reversed operands");

    /* growing needs several sweeps: a chain along the anti-diagonal direction.
    ** a = {0-0, 1-1, 2-2, 3-3} ("0-0" only in b too); b = {0-0}.  Sweep 1 takes
    ** 1-1 (next to 0-0), then 2-2 (next to the fresh 1-1) and 3-3 in the same sweep. */
    app_link a3[] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, b3[] = {{0, 0}};
    CHECK_STATUS(app_symmetrize(4, 4, a3, 4, b3, 1, APP_SYM_GROW_DIAG, out, &n));
    CHECK(n == 4, "chain grows in one sweep: %lld", (long long)n);
    /* a point is only taken when one of its words is unaligned */
    app_link a4[] = {{0, 0}, {1, 1}, {0, 1}}, b4[] = {{0, 0}, {1, 1}};
    CHECK_STATUS(app_symmetrize(2, 2, a4, 3, b4, 2, APP_SYM_GROW_DIAG_FINAL, out, &n));
    CHECK(n == 2, "0-1 joins two aligned words: %lld links", (long long)n);

    app_link badl[] = {{0, 5}};
    CHECK(app_symmetrize(2, 2, badl, 1, b4, 2, APP_SYM_UNION, out, &n) == MT_ERR_INVALID,
          "link outside the grid");
    app_sym s;
    CHECK_STATUS(app_sym_parse("grow-diag-final-and", &s));
    CHECK(s == APP_SYM_GROW_DIAG_FINAL_AND, "parse gdfa");
    CHECK(app_sym_parse("grow", &s) == MT_ERR_INVALID, "unknown heuristic");
}

/* -------------------------------------------------------------- parsing */

static void test_parse(void) {
    app_link *l = NULL;
    int64_t n = -1;
    const char *s = " 0-1\t12-3  4-0 ";
    CHECK_STATUS(app_links_parse(s, strlen(s), &l, &n));
    CHECK(n == 3 && l[0].src == 0 && l[0].trg == 1 && l[1].src == 12 && l[1].trg == 3 &&
              l[2].src == 4 && l[2].trg == 0,
          "links parsed");
    mt_free(l);
    CHECK_STATUS(app_links_parse("", 0, &l, &n));
    CHECK(n == 0, "empty line");
    mt_free(l);
    const char *bad[] = {"0-", "-1", "1-2x", "1--2", "a-b", "99999999999-1", "1 - 2"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK(app_links_parse(bad[k], strlen(bad[k]), &l, &n) == MT_ERR_FORMAT, "'%s' refused",
              bad[k]);

    char dir[] = "/tmp/test_align_XXXXXX";
    if (!mkdtemp(dir)) return;
    char p1[256], p2[256], p3[256];
    snprintf(p1, sizeof p1, "%s/c.joined", dir);
    snprintf(p2, sizeof p2, "%s/c.src", dir);
    snprintf(p3, sizeof p3, "%s/c.trg", dir);
    FILE *f = fopen(p1, "w");
    fputs("das haus ||| the house\r\nklein\t ||| small\nx|||y ||| z", f);
    fclose(f);
    app_bitext *bt = NULL;
    CHECK_STATUS(app_bitext_read_joined(p1, &bt));
    if (bt) {
        CHECK(bt->n == 3, "3 pairs, got %lld", (long long)bt->n);
        CHECK(bt->src_off[1] == 2 && bt->trg_off[1] == 2, "pair 1 lengths");
        CHECK(bt->src_off[2] - bt->src_off[1] == 1, "pair 2 source length");
        CHECK(strcmp(app_interner_str(bt->vocab, bt->src_tok[2]), "klein") == 0, "tab separated");
        CHECK(strcmp(app_interner_str(bt->vocab, bt->src_tok[3]), "x|||y") == 0,
              "||| inside a token is not a separator");
        CHECK(strcmp(app_interner_str(bt->vocab, bt->trg_tok[1]), "house") == 0, "CR dropped");
        app_bitext_free(bt);
        bt = NULL;
    }
    f = fopen(p1, "w");
    fputs("a b ||| c\n ||| d\n", f);
    fclose(f);
    CHECK(app_bitext_read_joined(p1, &bt) == MT_ERR_FORMAT && strstr(mt_errmsg(), "line 2"),
          "empty source side: %s", mt_errmsg());
    f = fopen(p2, "w");
    fputs("a b\nc\n", f);
    fclose(f);
    f = fopen(p3, "w");
    fputs("x y\n", f);
    fclose(f);
    CHECK(app_bitext_read_pair(p2, p3, &bt) == MT_ERR_FORMAT, "line counts differ");
    f = fopen(p3, "w");
    fputs("x y\nz", f);
    fclose(f);
    CHECK_STATUS(app_bitext_read_pair(p2, p3, &bt));
    if (bt) CHECK(bt->n == 2 && bt->trg_off[2] == 3, "two files");
    app_bitext_free(bt);
    CHECK(app_bitext_read_pair(p2, "/nonexistent/x", &bt) == MT_ERR_IO, "missing file");
    remove(p1);
    remove(p2);
    remove(p3);
    rmdir(dir);
}

static void test_interner(void) {
    app_interner *in = NULL;
    CHECK_STATUS(app_interner_init(&in));
    if (!in) return;
    char buf[32];
    int ok = 1;
    for (int k = 0; k < 20000; k++) {
        int32_t id;
        int n = snprintf(buf, sizeof buf, "w%d", k % 7000);
        if (app_interner_add(in, buf, (size_t)n, &id) != MT_OK || id != k % 7000) ok = 0;
    }
    CHECK(ok, "ids in order of first appearance");
    CHECK(app_interner_size(in) == 7000, "size");
    CHECK(strcmp(app_interner_str(in, 6999), "w6999") == 0, "string back");
    CHECK(app_interner_find(in, "w12", 3) == 12 && app_interner_find(in, "w7000", 5) == -1, "find");
    int32_t e;
    CHECK_STATUS(app_interner_add(in, "", 0, &e));
    CHECK(e == 7000 && app_interner_str(in, e)[0] == '\0', "empty string");
    app_interner_free(in);
}

/* Every allocation failure gives a clean status (ASan checks for leaks). */
static void test_alloc_failures(void) {
    synth sy;
    make_synth(&sy, 40, 20, 0.3, false);
    app_align_params p = app_align_default_params();
    p.favor_diagonal = p.optimize_tension = p.variational_bayes = true;
    int64_t n = 0;
    mt_status rc;
    do {
        app_alignment *al = NULL, *rev = NULL, *sym = NULL;
        app_align_model *m = NULL;
        mt_alloc_fail_at(n, true);
        rc = app_align_run(sy.bt, &p, &al, &m, NULL);
        if (rc == MT_OK) {
            app_align_params pr = p;
            pr.reverse = true;
            rc = app_align_run(sy.bt, &pr, &rev, NULL, NULL);
        }
        if (rc == MT_OK)
            rc = app_alignment_symmetrize(sy.bt, al, rev, APP_SYM_GROW_DIAG_FINAL_AND, &sym);
        mt_alloc_fail_at(-1, false);
        CHECK(rc == MT_OK || rc == MT_ERR_NOMEM, "failure %lld: %s", (long long)n,
              mt_status_str(rc));
        app_alignment_free(al);
        app_alignment_free(rev);
        app_alignment_free(sym);
        app_align_model_free(m);
        n++;
    } while (rc != MT_OK && n < 10000);
    CHECK(rc == MT_OK, "succeeds once allocations work (%lld)", (long long)n);
    free_synth(&sy);

    /* building a corpus under failures */
    n = 0;
    do {
        app_bitext *bt = NULL;
        mt_alloc_fail_at(n, true);
        rc = app_bitext_init(&bt);
        for (int k = 0; rc == MT_OK && k < 3000; k++) {
            char s[64], t[64];
            int ls = snprintf(s, sizeof s, "a%d b%d c", k, k % 7);
            int lt = snprintf(t, sizeof t, "x%d y", k);
            rc = app_bitext_add(bt, s, (size_t)ls, t, (size_t)lt, k + 1);
        }
        mt_alloc_fail_at(-1, false);
        CHECK(rc == MT_OK || rc == MT_ERR_NOMEM, "bitext failure %lld", (long long)n);
        app_bitext_free(bt);
        n++;
    } while (rc != MT_OK && n < 10000);
    CHECK(rc == MT_OK, "bitext succeeds eventually");
}

int main(void) {
    mt_log_set(silent, NULL);
    test_parse();
    test_interner();
    test_hand_model1();
    test_against_dense();
    test_loglik_increases();
    test_tension();
    test_symmetrize();
    test_synthetic_aer();
    test_alloc_failures();
    TEST_MAIN_END();
}
