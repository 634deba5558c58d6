/*
** yaml.c: the small part of YAML that model configs use (special:model.yml,
** model.npz.decoder.yml): a document whose top level is a mapping from
** scalar keys to scalars or to sequences of scalars, e.g.
**
**     type: transformer
**     dim-vocabs:
**       - 4000
**       - 4000
**     input-types: []
**
** Parsing is libyaml's event parser; the result is a flat table of the
** top-level keys in document order.  Values of any other shape (nested
** mappings, sequences of sequences, aliases) are kept as keys without a
** value.  Only the first document of a stream is read.  Parse errors are
** MT_ERR_FORMAT with libyaml's problem and its 1-based line and column.
*/
#include <string.h>
#include <yaml.h>

#include "mt.h"

typedef enum entry_kind { ENTRY_OTHER, ENTRY_SCALAR, ENTRY_SEQ } entry_kind;

typedef struct yaml_entry {
    char *key;
    entry_kind kind;
    char *scalar;
    int n_items;
    char **items;
} yaml_entry;

/* Entries in document order, plus an open-addressing hash index over the
** keys (Marian's YAML vocabularies have tens of thousands of keys). */
struct mt_yaml {
    int n, cap;
    yaml_entry *e;
    int *slots; /* n_slots entries: index into e, or -1 */
    int n_slots;
};

static uint32_t key_hash(const char *s) { /* FNV-1a */
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Slot of key: the one holding it, or the empty one where it would go. */
static int slot_of(const mt_yaml *y, const char *key) {
    uint32_t mask = (uint32_t)y->n_slots - 1, i = key_hash(key) & mask;
    while (y->slots[i] >= 0 && strcmp(y->e[y->slots[i]].key, key) != 0)
        i = (i + 1) & mask;
    return (int)i;
}

/* Keeps the index at most half full. */
static mt_status index_reserve(mt_yaml *y, int n) {
    if (2 * n <= y->n_slots) return MT_OK;
    int ns = y->n_slots ? y->n_slots : 64;
    while (2 * n > ns)
        ns *= 2;
    int *slots = mt_try_malloc((size_t)ns * sizeof *slots);
    if (slots == NULL) return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
    for (int i = 0; i < ns; i++)
        slots[i] = -1;
    mt_free(y->slots);
    y->slots = slots;
    y->n_slots = ns;
    for (int k = 0; k < y->n; k++)
        y->slots[slot_of(y, y->e[k].key)] = k;
    return MT_OK;
}

static void entry_clear_value(yaml_entry *e) {
    mt_free(e->scalar);
    for (int i = 0; i < e->n_items; i++)
        mt_free(e->items[i]);
    mt_free(e->items);
    e->scalar = NULL;
    e->items = NULL;
    e->n_items = 0;
    e->kind = ENTRY_OTHER;
}

void mt_yaml_free(mt_yaml *y) {
    if (y == NULL) return;
    for (int i = 0; i < y->n; i++) {
        entry_clear_value(&y->e[i]);
        mt_free(y->e[i].key);
    }
    mt_free(y->e);
    mt_free(y->slots);
    mt_free(y);
}

static mt_status parse_error(const yaml_parser_t *p) {
    if (p->error == YAML_MEMORY_ERROR) return mt_seterr(MT_ERR_NOMEM, "YAML parser: out of memory");
    const char *problem = p->problem ? p->problem : "syntax error";
    if (p->context)
        return mt_seterr(MT_ERR_FORMAT, "YAML parse error at line %zu, column %zu: %s (%s)",
                         p->problem_mark.line + 1, p->problem_mark.column + 1, problem, p->context);
    return mt_seterr(MT_ERR_FORMAT, "YAML parse error at line %zu, column %zu: %s",
                     p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

/* Next event into *ev (caller deletes it). */
static mt_status next_event(yaml_parser_t *p, yaml_event_t *ev) {
    if (!yaml_parser_parse(p, ev)) return parse_error(p);
    return MT_OK;
}

/* Skips the rest of a collection whose start event was just read. */
static mt_status skip_collection(yaml_parser_t *p) {
    int depth = 1;
    while (depth > 0) {
        yaml_event_t ev;
        mt_status rc = next_event(p, &ev);
        if (rc != MT_OK) return rc;
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) depth++;
        if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) depth--;
        bool end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (end) return mt_seterr(MT_ERR_FORMAT, "YAML: unexpected end of stream");
    }
    return MT_OK;
}

static char *scalar_dup(const yaml_event_t *ev) {
    size_t n = ev->data.scalar.length;
    char *s = mt_try_malloc(n + 1);
    if (s == NULL) return NULL;
    memcpy(s, ev->data.scalar.value, n);
    s[n] = '\0';
    return s;
}

/* Reads a sequence (start event consumed) into e: scalars only, else the
** value becomes ENTRY_OTHER. */
static mt_status read_sequence(yaml_parser_t *p, yaml_entry *e) {
    e->kind = ENTRY_SEQ;
    int cap = 0;
    for (;;) {
        yaml_event_t ev;
        mt_status rc = next_event(p, &ev);
        if (rc != MT_OK) return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return MT_OK;
        }
        if (ev.type == YAML_SCALAR_EVENT) {
            if (e->kind == ENTRY_SEQ) {
                if (e->n_items == cap) {
                    int ncap = cap ? 2 * cap : 4;
                    char **items = mt_try_realloc(e->items, (size_t)ncap * sizeof *items);
                    if (items == NULL) {
                        yaml_event_delete(&ev);
                        return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
                    }
                    e->items = items;
                    cap = ncap;
                }
                char *s = scalar_dup(&ev);
                if (s == NULL) {
                    yaml_event_delete(&ev);
                    return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
                }
                e->items[e->n_items++] = s;
            }
            yaml_event_delete(&ev);
            continue;
        }
        bool nested = ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT;
        bool alias = ev.type == YAML_ALIAS_EVENT;
        yaml_event_delete(&ev);
        if (!nested && !alias) return mt_seterr(MT_ERR_FORMAT, "YAML: malformed sequence");
        entry_clear_value(e); /* not a sequence of scalars */
        if (nested) {
            rc = skip_collection(p);
            if (rc != MT_OK) return rc;
        }
    }
}

/* Finds or appends the entry for key (takes ownership of key). */
static mt_status entry_for(mt_yaml *y, char *key, yaml_entry **out) {
    mt_status rc = index_reserve(y, y->n + 1);
    if (rc != MT_OK) {
        mt_free(key);
        return rc;
    }
    int slot = slot_of(y, key);
    if (y->slots[slot] >= 0) { /* repeated key: the later value wins */
        yaml_entry *e = &y->e[y->slots[slot]];
        mt_free(key);
        entry_clear_value(e);
        *out = e;
        return MT_OK;
    }
    if (y->n == y->cap) {
        int ncap = y->cap ? 2 * y->cap : 32;
        yaml_entry *e = mt_try_realloc(y->e, (size_t)ncap * sizeof *e);
        if (e == NULL) {
            mt_free(key);
            return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
        }
        y->e = e;
        y->cap = ncap;
    }
    yaml_entry *e = &y->e[y->n];
    memset(e, 0, sizeof *e);
    e->key = key;
    y->slots[slot] = y->n++;
    *out = e;
    return MT_OK;
}

/* Reads the top-level mapping (start event consumed). */
static mt_status read_mapping(yaml_parser_t *p, mt_yaml *y) {
    for (;;) {
        yaml_event_t ev;
        mt_status rc = next_event(p, &ev);
        if (rc != MT_OK) return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return MT_OK;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
            yaml_event_delete(&ev);
            return mt_seterr(MT_ERR_FORMAT,
                             "YAML: line %zu, column %zu: only scalar keys are supported", line,
                             col);
        }
        char *key = scalar_dup(&ev);
        yaml_event_delete(&ev);
        if (key == NULL) return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
        yaml_entry *e = NULL;
        rc = entry_for(y, key, &e);
        if (rc != MT_OK) return rc;

        rc = next_event(p, &ev);
        if (rc != MT_OK) return rc;
        switch (ev.type) {
        case YAML_SCALAR_EVENT:
            e->scalar = scalar_dup(&ev);
            e->kind = ENTRY_SCALAR;
            yaml_event_delete(&ev);
            if (e->scalar == NULL) {
                e->kind = ENTRY_OTHER;
                return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
            yaml_event_delete(&ev);
            rc = read_sequence(p, e);
            if (rc != MT_OK) return rc;
            break;
        case YAML_MAPPING_START_EVENT:
            yaml_event_delete(&ev);
            rc = skip_collection(p);
            if (rc != MT_OK) return rc;
            break;
        default: /* alias */ yaml_event_delete(&ev); break;
        }
    }
}

mt_status mt_yaml_parse(const char *text, mt_yaml **out) {
    MT_ASSERT(text != NULL && out != NULL);
    mt_yaml *y = mt_try_calloc(1, sizeof *y);
    if (y == NULL) return mt_seterr(MT_ERR_NOMEM, "YAML: out of memory");
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        mt_free(y);
        return mt_seterr(MT_ERR_NOMEM, "YAML parser: out of memory");
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    mt_status rc = MT_OK;
    bool root_done = false;
    while (rc == MT_OK && !root_done) {
        yaml_event_t ev;
        rc = next_event(&p, &ev);
        if (rc != MT_OK) break;
        yaml_event_type_t t = ev.type;
        size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
        bool empty_scalar =
            t == YAML_SCALAR_EVENT && ev.data.scalar.length == 0 && ev.data.scalar.plain_implicit;
        yaml_event_delete(&ev);
        switch (t) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT: break;
        case YAML_STREAM_END_EVENT: /* no document: an empty mapping */
        case YAML_DOCUMENT_END_EVENT: root_done = true; break;
        case YAML_MAPPING_START_EVENT:
            rc = read_mapping(&p, y);
            root_done = true;
            break;
        default:
            if (empty_scalar) { /* "---" alone: null document */
                root_done = true;
                break;
            }
            rc = mt_seterr(MT_ERR_FORMAT,
                           "YAML: line %zu, column %zu: the top level is not a mapping", line, col);
            break;
        }
    }
    yaml_parser_delete(&p);
    if (rc != MT_OK) {
        mt_yaml_free(y);
        return rc;
    }
    *out = y;
    return MT_OK;
}

int mt_yaml_count(const mt_yaml *y) { return y ? y->n : 0; }

const char *mt_yaml_key(const mt_yaml *y, int i) {
    return (y && i >= 0 && i < y->n) ? y->e[i].key : NULL;
}

static const yaml_entry *find(const mt_yaml *y, const char *key) {
    if (y == NULL || key == NULL || y->n == 0) return NULL;
    int k = y->slots[slot_of(y, key)];
    return k >= 0 ? &y->e[k] : NULL;
}

const char *mt_yaml_get(const mt_yaml *y, const char *key) {
    const yaml_entry *e = find(y, key);
    return (e && e->kind == ENTRY_SCALAR) ? e->scalar : NULL;
}

int mt_yaml_seq_len(const mt_yaml *y, const char *key) {
    const yaml_entry *e = find(y, key);
    return (e && e->kind == ENTRY_SEQ) ? e->n_items : -1;
}

const char *mt_yaml_seq_item(const mt_yaml *y, const char *key, int i) {
    const yaml_entry *e = find(y, key);
    if (e == NULL || e->kind != ENTRY_SEQ || i < 0 || i >= e->n_items) return NULL;
    return e->items[i];
}
