/*
** cpuid.c: instruction-set detection for the dispatching kernels, the
** MT_ISA environment cap, the test hook kcpu_isa_force, and the OpenBLAS
** kernel-set fixup (OPENBLAS_CORETYPE).
**
** OpenBLAS (DYNAMIC_ARCH builds, as Debian ships) picks its kernel set in
** its own ELF constructor, reading OPENBLAS_CORETYPE once.  Constructors of
** shared libraries run before those of the executable, so a constructor in
** this static library runs too late to influence the process it is in; it
** still sets the variable, which then reaches child processes.  The
** reliable fix for the process itself is the re-exec done by app/main.c
** when kcpu_blas_needs_reexec() says so.
*/
#include "kcpu_impl.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* From OpenBLAS (cblas.h); declared here to keep this file free of BLAS
** headers. */
char *openblas_get_corename(void);

typedef struct cpu_caps {
    bool avx2, fma, f16c, avx512, vnni, bf16;
    bool amd;
    unsigned family;
} cpu_caps;

static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static cpu_caps cpu_probe(void) {
    cpu_caps c;
    memset(&c, 0, sizeof c);
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d)) {
        return c;
    }
    unsigned max_leaf = a;
    c.amd = b == 0x68747541u; /* "Auth" enticAMD */
    if (!__get_cpuid(1, &a, &b, &cx, &d)) {
        return c;
    }
    unsigned fam = (a >> 8) & 0xf;
    c.family = fam == 0xf ? fam + ((a >> 20) & 0xff) : fam;
    bool osxsave = (cx >> 27) & 1, avx = (cx >> 28) & 1;
    c.fma = (cx >> 12) & 1;
    c.f16c = (cx >> 29) & 1;
    if (!osxsave || !avx || max_leaf < 7) {
        c.fma = c.f16c = false;
        return c;
    }
    uint64_t xcr0 = xgetbv0();
    bool os_avx = (xcr0 & 0x6) == 0x6;
    bool os_avx512 = (xcr0 & 0xe6) == 0xe6;
    if (!os_avx) {
        c.fma = c.f16c = false;
        return c;
    }
    __cpuid_count(7, 0, a, b, cx, d);
    c.avx2 = (b >> 5) & 1;
    bool f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    c.avx512 = os_avx512 && f && dq && bw && vl && c.avx2 && c.fma && c.f16c;
    c.vnni = c.avx512 && ((cx >> 11) & 1);
    unsigned max_sub = a;
    if (c.avx512 && max_sub >= 1) {
        __cpuid_count(7, 1, a, b, cx, d);
        c.bf16 = (a >> 5) & 1; /* AVX512_BF16 */
    }
    return c;
}

static const cpu_caps *cpu_caps_get(void) {
    static cpu_caps caps;
    static atomic_int done;
    if (!atomic_load_explicit(&done, memory_order_acquire)) {
        caps = cpu_probe(); /* idempotent: a racing second probe writes the same */
        atomic_store_explicit(&done, 1, memory_order_release);
    }
    return &caps;
}

static kcpu_isa isa_from_env(kcpu_isa best) {
    const char *e = getenv("MT_ISA");
    if (!e || !*e) {
        return best;
    }
    kcpu_isa cap = best;
    if (strcasecmp(e, "ref") == 0) {
        cap = KCPU_ISA_REF;
    } else if (strcasecmp(e, "avx2") == 0) {
        cap = KCPU_ISA_AVX2;
    } else if (strcasecmp(e, "avx512") == 0) {
        cap = KCPU_ISA_AVX512;
    }
    return cap < best ? cap : best;
}

kcpu_isa kcpu_isa_detect(void) {
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        const cpu_caps *c = cpu_caps_get();
        kcpu_isa best = KCPU_ISA_REF;
        if (c->avx2 && c->fma && c->f16c) {
            best = KCPU_ISA_AVX2;
        }
#ifdef MT_HAVE_AVX512_BUILD
        if (c->avx512) {
            best = KCPU_ISA_AVX512;
        }
#endif
        v = (int)isa_from_env(best);
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return (kcpu_isa)v;
}

static atomic_int isa_cap = KCPU_ISA_AVX512;

kcpu_isa kcpu_isa_force(kcpu_isa isa) {
    return (kcpu_isa)atomic_exchange(&isa_cap, (int)isa);
}

kcpu_isa kcpu_isa_active(void) {
    kcpu_isa d = kcpu_isa_detect();
    kcpu_isa cap = (kcpu_isa)atomic_load_explicit(&isa_cap, memory_order_relaxed);
    return cap < d ? cap : d;
}

const char *kcpu_isa_name(kcpu_isa isa) {
    switch (isa) {
    case KCPU_ISA_REF: return "ref";
    case KCPU_ISA_AVX2: return "avx2";
    case KCPU_ISA_AVX512: return "avx512";
    }
    return "?";
}

bool kcpu_cpu_has_avx512_vnni(void) {
    return cpu_caps_get()->vnni;
}

bool kcpu_cpu_has_avx512_bf16(void) { return cpu_caps_get()->bf16; }

/* OpenBLAS 0.3.21 knows AMD up to family 0x19 (Zen 3/4: it picks Cooperlake
** or SkylakeX there); family 0x1a (Zen 5) and later get a non-AVX-512 set. */
static bool blas_cpu_unknown_avx512(void) {
    const cpu_caps *c = cpu_caps_get();
    return c->avx512 && c->amd && c->family >= 0x1a;
}

static bool ctor_set_coretype;

bool kcpu_blas_coretype_fixup(void) {
    if (!blas_cpu_unknown_avx512() || getenv("OPENBLAS_CORETYPE")) {
        return false;
    }
    return setenv("OPENBLAS_CORETYPE", "SkylakeX", 0) == 0;
}

__attribute__((constructor(101))) static void kcpu_ctor(void) {
    ctor_set_coretype = kcpu_blas_coretype_fixup();
}

const char *kcpu_blas_corename(void) {
    const char *s = openblas_get_corename();
    return s ? s : "?";
}

static bool corename_has_avx512(const char *s) {
    return strcasecmp(s, "SkylakeX") == 0 || strcasecmp(s, "Cooperlake") == 0 ||
           strcasecmp(s, "SapphireRapids") == 0;
}

bool kcpu_blas_needs_reexec(void) {
    const cpu_caps *c = cpu_caps_get();
    /* A variable set by the user (or by a re-exec'ing parent) is final; one
    ** set by our constructor came too late for this process. */
    if (!c->avx512 || (getenv("OPENBLAS_CORETYPE") != NULL && !ctor_set_coretype)) {
        return false;
    }
    return !corename_has_avx512(kcpu_blas_corename());
}
