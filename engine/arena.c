/*
** arena.c: bump allocator over a list of chunks (graph nodes, temporary
** host data of one batch).  reset() keeps one chunk; when a round needed
** several, the kept chunk is regrown to their total, so a steady workload
** settles on a single chunk and stops allocating.
*/
#include <stdint.h>
#include <string.h>

#include "mt_base.h"

typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
    _Alignas(64) unsigned char data[];
} chunk;

struct mt_arena {
    chunk *head; /* current chunk (most recent first) */
    size_t chunk_bytes;
    uint64_t grows;
};

static chunk *chunk_new(size_t cap) {
    chunk *c = mt_try_malloc(sizeof(chunk) + cap);
    if (c) {
        c->next = NULL;
        c->cap = cap;
        c->used = 0;
    }
    return c;
}

mt_status mt_arena_init(size_t chunk_bytes, mt_arena **out) {
    *out = NULL;
    mt_arena *a = mt_try_calloc(1, sizeof *a);
    if (!a) return mt_seterr(MT_ERR_NOMEM, "arena: out of memory");
    a->chunk_bytes = chunk_bytes ? chunk_bytes : 4096;
    a->head = chunk_new(a->chunk_bytes);
    if (!a->head) {
        mt_free(a);
        return mt_seterr(MT_ERR_NOMEM, "arena: cannot allocate %zu bytes", chunk_bytes);
    }
    *out = a;
    return MT_OK;
}

void *mt_arena_alloc(mt_arena *a, size_t n, size_t align) {
    if (align == 0) align = 16;
    chunk *c = a->head;
    size_t off = (c->used + align - 1) & ~(align - 1);
    if (off + n > c->cap) {
        size_t cap = a->chunk_bytes > n + align ? a->chunk_bytes : n + align;
        chunk *nc = chunk_new(cap);
        if (!nc) return NULL;
        nc->next = c;
        a->head = c = nc;
        a->grows++;
        off = 0;
    }
    c->used = off + n;
    return c->data + off;
}

void mt_arena_reset(mt_arena *a) {
    if (a->head->next != NULL) {
        size_t total = 0;
        for (chunk *c = a->head; c; c = c->next) total += c->cap;
        chunk *big = chunk_new(total); /* on failure keep the oldest chunk */
        chunk *c = a->head;
        while (c->next || big) {
            chunk *next = c->next;
            mt_free(c);
            if (!next) break;
            c = next;
        }
        a->head = big ? big : c;
        a->head->next = NULL;
        if (big) a->chunk_bytes = total;
    }
    a->head->used = 0;
}

void mt_arena_free(mt_arena *a) {
    if (!a) return;
    chunk *c = a->head;
    while (c) {
        chunk *next = c->next;
        mt_free(c);
        c = next;
    }
    mt_free(a);
}

size_t mt_arena_capacity(const mt_arena *a) {
    size_t n = 0;
    for (const chunk *c = a->head; c; c = c->next) n += c->cap;
    return n;
}

size_t mt_arena_used(const mt_arena *a) {
    size_t n = 0;
    for (const chunk *c = a->head; c; c = c->next) n += c->used;
    return n;
}

uint64_t mt_arena_grow_count(const mt_arena *a) { return a->grows; }
