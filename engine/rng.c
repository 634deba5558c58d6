/*
** rng.c: small reproducible random numbers for initialisation and dropout.
**
** Generator: xoshiro256** (Blackman & Vigna), state seeded by running
** splitmix64 from the 64-bit seed, so that similar seeds give unrelated
** streams and the state is never all zero.  Results depend only on the seed
** and the call sequence (no platform-dependent library calls except
** log/sqrt/cos in mt_rng_normal).
*/
#include <math.h>

#include "mt.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void mt_rng_seed(mt_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

uint64_t mt_rng_next(mt_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Top 24 bits: every value k * 2^-24, k in [0, 2^24), exactly representable. */
float mt_rng_uniform(mt_rng *r) { return (float)(mt_rng_next(r) >> 40) * (1.0f / 16777216.0f); }

/* Box-Muller with u1 in (0, 1] (so log(u1) is finite); one value per call,
** the sine partner is dropped to keep the state a plain 256-bit word. */
float mt_rng_normal(mt_rng *r) {
    double u1 = ((double)(mt_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(mt_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
