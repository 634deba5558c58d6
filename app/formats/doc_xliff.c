/*
** doc_xliff.c: XLIFF 1.2 documents through libxml2.
**
** File format (OASIS XLIFF 1.2, namespace urn:oasis:names:tc:xliff:document:1.2;
** files without the namespace are read the same way):
**
**   ELEMENT / ATTRIBUTE          USE HERE
**   <xliff version="1.2">        root; version 2.x is refused (unsupported)
**   <file source-language        one or more; languages of the first file are
**         target-language>       the document's
**   <body>, <group>              containers; group nests; translate="no" on a
**                                group or trans-unit skips the units in it
**   <trans-unit id resname       one segment; context = resname, else id;
**               approved>        approved="yes" means confirmed
**   <source>                     segment.source, inline tags as placeholders
**   <target state                the translation; created after <source> (and
**           state-qualifier>     <seg-source>) when missing
**   <note>                       segment.note (several joined by newlines)
**   everything else              kept untouched (alt-trans, context-group,
**                                other namespaces, comments, attributes)
**
** Inline elements of <source>/<target> map to placeholders (doc.h):
** <g> and <mrk> are paired and their content is text; <x/>, <bx/>, <ex/>,
** <ph>, <bpt>, <ept>, <it>, unknown elements, comments, processing
** instructions and entity references are standalone and copied whole,
** but for references to internal entities whose replacement is plain text
** (<!ENTITY h "house">): segment text shows (and MT reads) that text, and
** the file keeps the reference where the element is not rewritten.
** Elements of an existing <target> are matched to the source's by name and
** id (or, without id, by order among same-named ones); unmatched ones get
** numbers after the source's, so they survive a round trip too.
**
** Parsing uses XML_PARSE_NONET and no entity substitution or DTD loading,
** so reading a file never touches the network or other files.  libxml2's
** error output is captured (a structured error handler installed for the
** duration of each call), never printed.  Saving writes the modified tree
** with xmlSaveToIO through app_doc_atomic_write; a document without changes
** is written back byte for byte.  A changed one keeps the original's form
** (xl_form): BOM, declaration as written, UTF-16 byte order, CRLF line
** ends, and a final line end or not.
*/
#include <libxml/entities.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "xml_errors.h"

/* U+27E6 / U+27E7, the placeholder delimiters */
#define LB "\xe2\x9f\xa6"
#define RB "\xe2\x9f\xa7"

typedef struct xl_tag {
    xmlNodePtr tmpl; /* the element copied on save                         */
    bool paired;
    bool owned; /* tmpl is our private copy (from an old <target>)    */
} xl_tag;

typedef struct xl_unit {
    xmlNodePtr tu, source, target;
    xl_tag *tags; /* placeholder k is tags[k - 1]                          */
    int n_tags, n_src_tags;
} xl_unit;

typedef struct xl_doc {
    xmlDocPtr doc;
    xl_unit *units;
    int64_t n_units, cap_units;
} xl_doc;

/* ---------------------------------------------------------- small helpers */

static bool is_xl(xmlNodePtr n, const char *name) {
    if (n == NULL || n->type != XML_ELEMENT_NODE || !xmlStrEqual(n->name, BAD_CAST name))
        return false;
    return n->ns == NULL ||
           xmlStrncmp(n->ns->href, BAD_CAST "urn:oasis:names:tc:xliff:document:", 34) == 0;
}

static bool prop_is(xmlNodePtr n, const char *name, const char *value) {
    xmlChar *v = xmlGetProp(n, BAD_CAST name);
    bool eq = v != NULL && xmlStrcasecmp(v, BAD_CAST value) == 0;
    xmlFree(v);
    return eq;
}

static mt_status nomem(const app_doc *d) {
    return mt_seterr(MT_ERR_NOMEM, "out of memory in XLIFF document '%s'", d->path);
}

/* Text with literal brackets doubled. */
static void put_text(app_doc_buf *b, const xmlChar *s) {
    if (s == NULL) return;
    const char *p = (const char *)s;
    for (;;) {
        const char *q = strstr(p, "\xe2\x9f");
        if (q == NULL) break;
        app_doc_buf_put(b, p, (size_t)(q - p));
        if ((unsigned char)q[2] == 0xa6 || (unsigned char)q[2] == 0xa7) {
            app_doc_buf_put(b, q, 3);
            app_doc_buf_put(b, q, 3);
            p = q + 3;
        } else {
            app_doc_buf_put(b, q, 2);
            p = q + 2;
        }
    }
    app_doc_buf_puts(b, p);
}

static bool is_paired(xmlNodePtr n) {
    return n->type == XML_ELEMENT_NODE && (is_xl(n, "g") || is_xl(n, "mrk"));
}

static mt_status add_tag(const app_doc *d, xl_unit *u, xmlNodePtr tmpl, bool paired, bool owned,
                         int *num) {
    xl_tag *t = mt_try_realloc(u->tags, (size_t)(u->n_tags + 1) * sizeof *t);
    if (t == NULL) {
        if (owned) xmlFreeNode(tmpl);
        return nomem(d);
    }
    u->tags = t;
    t[u->n_tags] = (xl_tag){tmpl, paired, owned};
    *num = ++u->n_tags;
    return MT_OK;
}

static bool same_id(xmlNodePtr a, xmlNodePtr b) {
    xmlChar *ia = xmlGetProp(a, BAD_CAST "id"), *ib = xmlGetProp(b, BAD_CAST "id");
    bool eq = (ia == NULL && ib == NULL) || (ia && ib && xmlStrEqual(ia, ib));
    xmlFree(ia);
    xmlFree(ib);
    return eq;
}

/* For an element of an old <target>: the source placeholder it stands for,
** or 0.  used[] marks source placeholders already matched. */
static int match_source_tag(const xl_unit *u, xmlNodePtr n, const bool *used) {
    if (n->type != XML_ELEMENT_NODE) return 0;
    for (int k = 0; k < u->n_src_tags; k++) {
        xmlNodePtr s = u->tags[k].tmpl;
        if (!used[k] && s->type == XML_ELEMENT_NODE && xmlStrEqual(s->name, n->name) &&
            u->tags[k].paired == is_paired(n) && same_id(s, n))
            return k + 1;
    }
    return 0;
}

/* The replacement text of a reference to an internal entity of the
** document's DTD subset (<!ENTITY h "house">) when it is plain text, else
** NULL: external entities (never read), undeclared ones and those whose
** text holds markup or other references stay placeholders.  The file keeps
** the reference: only a rewritten <target> holds the text instead. */
static const xmlChar *internal_text(xmlNodePtr n) {
    if (n->type != XML_ENTITY_REF_NODE || n->doc == NULL) return NULL;
    xmlEntityPtr e = xmlGetDocEntity(n->doc, n->name);
    if (e == NULL || e->etype != XML_INTERNAL_GENERAL_ENTITY || e->content == NULL) return NULL;
    for (const xmlChar *p = e->content; *p; p++)
        if (*p == '<' || *p == '&') return NULL;
    return e->content;
}

/* Flattens the children of an inline container (<source>, <target>, <g>,
** <mrk>) into placeholder text.  Source side (used == NULL): every inline
** node becomes a new tag.  Target side: nodes matching a source tag reuse
** its number, others become tags with private copies. */
static mt_status flatten(const app_doc *d, xl_unit *u, xmlNodePtr parent, app_doc_buf *b,
                         bool *used) {
    for (xmlNodePtr c = parent->children; c != NULL; c = c->next) {
        if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
            put_text(b, c->content);
            continue;
        }
        const xmlChar *ent = internal_text(c);
        if (ent != NULL) { /* &h; declared as text: the text, for MT and the translator */
            put_text(b, ent);
            continue;
        }
        bool paired = is_paired(c);
        int num = used ? match_source_tag(u, c, used) : 0;
        if (num > 0) {
            used[num - 1] = true;
        } else if (used == NULL) {
            mt_status rc = add_tag(d, u, c, paired, false, &num);
            if (rc != MT_OK) return rc;
        } else {
            xmlNodePtr copy = xmlDocCopyNode(c, c->doc, 1);
            if (copy == NULL) return nomem(d);
            mt_status rc = add_tag(d, u, copy, paired, true, &num);
            if (rc != MT_OK) return rc;
        }
        char ph[32];
        if (paired) {
            snprintf(ph, sizeof ph, LB "%d" RB, num);
            app_doc_buf_puts(b, ph);
            mt_status rc = flatten(d, u, c, b, used);
            if (rc != MT_OK) return rc;
            snprintf(ph, sizeof ph, LB "/%d" RB, num);
        } else {
            snprintf(ph, sizeof ph, LB "%d/" RB, num);
        }
        app_doc_buf_puts(b, ph);
    }
    return b->failed ? nomem(d) : MT_OK;
}

/* ------------------------------------------------- placeholder tokenizer */

typedef enum tok_kind { TOK_TEXT, TOK_OPEN, TOK_CLOSE, TOK_SOLO, TOK_END } tok_kind;

/* Next token of s at *pp.  TOK_TEXT: the unescaped text goes to b (which
** may be NULL when only validating).  Returns -1 with *err set on bad syntax. */
static int next_token(const char **pp, app_doc_buf *b, int *num, const char **err) {
    const char *p = *pp;
    if (*p == '\0') return TOK_END;
    if (strncmp(p, LB, 3) == 0 && strncmp(p + 3, LB, 3) != 0) {
        p += 3;
        bool close = *p == '/';
        if (close) p++;
        long v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 7)
            v = v * 10 + (*p++ - '0'), digits++;
        bool solo = !close && *p == '/';
        if (solo) p++;
        if (digits == 0 || digits == 7 || strncmp(p, RB, 3) != 0) {
            *err =
                "malformed placeholder (expected \xe2\x9f\xa6"
                "N\xe2\x9f\xa7, \xe2\x9f\xa6/N"
                "\xe2\x9f\xa7 or \xe2\x9f\xa6N/\xe2\x9f\xa7; write \xe2\x9f\xa6\xe2\x9f\xa6 for a "
                "literal bracket)";
            return -1;
        }
        *pp = p + 3;
        *num = (int)v;
        return close ? TOK_CLOSE : solo ? TOK_SOLO : TOK_OPEN;
    }
    while (*p != '\0') {
        if (strncmp(p, LB, 3) == 0 || strncmp(p, RB, 3) == 0) {
            bool open = p[2] == LB[2];
            if (strncmp(p + 3, p, 3) != 0) {
                if (open) break; /* a placeholder starts here */
                *err = "unpaired \xe2\x9f\xa7 (write \xe2\x9f\xa7\xe2\x9f\xa7 for a literal one)";
                return -1;
            }
            if (b) app_doc_buf_put(b, p, 3);
            p += 6;
            continue;
        }
        if (b) app_doc_buf_putc(b, *p);
        p++;
    }
    *pp = p;
    return TOK_TEXT;
}

mt_status app_doc_strip_tags(const char *text, char **out) {
    app_doc_buf b = {0};
    const char *p = text, *err = NULL;
    int kind, num;
    while ((kind = next_token(&p, &b, &num, &err)) != TOK_END) {
        if (kind < 0) {
            app_doc_buf_free(&b);
            return mt_seterr(MT_ERR_INVALID, "%s in \"%.60s\"", err, text);
        }
    }
    char *s = app_doc_buf_take(&b);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory stripping tags");
    *out = s;
    return MT_OK;
}

/* Checks placeholder use in a target text for unit u. */
static mt_status check_target(const app_doc *d, int64_t i, const xl_unit *u, const char *text) {
    int stack[64], depth = 0;
    char used[256] = {0};
    bool *big_used = NULL;
    const char *p = text, *err = NULL;
    int kind, num;
    mt_status rc = MT_OK;
    if (u->n_tags > (int)sizeof used) {
        big_used = mt_try_calloc((size_t)u->n_tags, 1);
        if (big_used == NULL) return nomem(d);
    }
    while ((kind = next_token(&p, NULL, &num, &err)) != TOK_END) {
        if (kind < 0) {
            rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: %s", d->path, (long long)i, err);
            break;
        }
        if (kind == TOK_TEXT) continue;
        if (num < 1 || num > u->n_tags) {
            rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: unknown placeholder %d (it has %d)",
                           d->path, (long long)i, num, u->n_tags);
            break;
        }
        bool paired = u->tags[num - 1].paired;
        if (kind == TOK_CLOSE) {
            if (depth == 0 || stack[depth - 1] != num) {
                rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: placeholder /%d closes %s",
                               d->path, (long long)i, num, depth ? "another one" : "nothing");
                break;
            }
            depth--;
            continue;
        }
        if (paired != (kind == TOK_OPEN)) {
            rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: placeholder %d is %s", d->path,
                           (long long)i, num,
                           paired ? "paired (needs an opening and a closing one)"
                                  : "standalone (written N/)");
            break;
        }
        char *seen = big_used ? (char *)&big_used[num - 1] : &used[num - 1];
        if (*seen) {
            rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: placeholder %d used twice", d->path,
                           (long long)i, num);
            break;
        }
        *seen = 1;
        if (kind == TOK_OPEN) {
            if (depth == (int)(sizeof stack / sizeof stack[0])) {
                rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: placeholders nested too deeply",
                               d->path, (long long)i);
                break;
            }
            stack[depth++] = num;
        }
    }
    if (rc == MT_OK && depth > 0)
        rc = mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: placeholder %d is not closed", d->path,
                       (long long)i, stack[depth - 1]);
    mt_free(big_used);
    return rc;
}

/* ---------------------------------------------------- rebuilding a target */

static xmlNsPtr find_ns(xmlDocPtr doc, xmlNodePtr n, xmlNsPtr want) {
    xmlNsPtr f = xmlSearchNs(doc, n, want->prefix);
    if (f && xmlStrEqual(f->href, want->href)) return f;
    if (want->prefix != NULL) {
        f = xmlSearchNsByHref(doc, n, want->href);
        if (f && f->prefix != NULL) return f;
    }
    return xmlNewNs(n, want->href, want->prefix);
}

/* Appends to parent a copy of t, with its children when deep.  Namespaces
** are looked up in parent's scope, so no redundant declarations appear. */
static xmlNodePtr copy_into(xmlDocPtr doc, xmlNodePtr parent, xmlNodePtr t, bool deep) {
    xmlNodePtr n = NULL;
    switch (t->type) {
    case XML_TEXT_NODE: n = xmlNewDocText(doc, t->content); break;
    case XML_CDATA_SECTION_NODE:
        n = xmlNewCDataBlock(doc, t->content, xmlStrlen(t->content));
        break;
    case XML_COMMENT_NODE: n = xmlNewDocComment(doc, t->content); break;
    case XML_PI_NODE: n = xmlNewDocPI(doc, t->name, t->content); break;
    case XML_ENTITY_REF_NODE: n = xmlNewReference(doc, t->name); break;
    case XML_ELEMENT_NODE: n = xmlNewDocNode(doc, NULL, t->name, NULL); break;
    default: return parent; /* nothing else occurs inside inline content */
    }
    if (n == NULL) return NULL;
    xmlNodePtr added = xmlAddChild(parent, n);
    if (added == NULL) {
        xmlFreeNode(n);
        return NULL;
    }
    if (t->type != XML_ELEMENT_NODE) return added;
    for (xmlNsPtr ns = t->nsDef; ns != NULL; ns = ns->next) {
        xmlNsPtr have = xmlSearchNs(doc, n, ns->prefix);
        if ((have == NULL || !xmlStrEqual(have->href, ns->href)) &&
            xmlNewNs(n, ns->href, ns->prefix) == NULL)
            return NULL;
    }
    if (t->ns != NULL) {
        xmlNsPtr ns = find_ns(doc, n, t->ns);
        if (ns == NULL) return NULL;
        xmlSetNs(n, ns);
    }
    for (xmlAttrPtr a = t->properties; a != NULL; a = a->next) {
        xmlChar *v = xmlNodeGetContent((xmlNodePtr)a);
        xmlNsPtr ns = a->ns ? find_ns(doc, n, a->ns) : NULL;
        xmlAttrPtr na = (a->ns == NULL || ns != NULL) ? xmlNewNsProp(n, ns, a->name, v) : NULL;
        xmlFree(v);
        if (na == NULL) return NULL;
    }
    if (deep) {
        for (xmlNodePtr c = t->children; c != NULL; c = c->next)
            if (copy_into(doc, n, c, true) == NULL) return NULL;
    }
    return n;
}

/* Fills el (empty) with the content of a checked target text. */
static bool build_content(xmlDocPtr doc, const xl_unit *u, xmlNodePtr el, const char *text) {
    xmlNodePtr stack[64];
    int depth = 0;
    xmlNodePtr cur = el;
    const char *p = text, *err = NULL;
    int kind, num;
    app_doc_buf b = {0};
    bool ok = true;
    while (ok && (kind = next_token(&p, &b, &num, &err)) != TOK_END) {
        switch (kind) {
        case TOK_TEXT:
            if (b.failed) {
                ok = false;
                break;
            }
            if (b.len) ok = xmlAddChild(cur, xmlNewDocTextLen(doc, BAD_CAST b.data, (int)b.len));
            b.len = 0;
            break;
        case TOK_OPEN: {
            xmlNodePtr n = copy_into(doc, cur, u->tags[num - 1].tmpl, false);
            ok = n != NULL;
            if (ok) {
                stack[depth++] = cur;
                cur = n;
            }
            break;
        }
        case TOK_CLOSE: cur = stack[--depth]; break;
        case TOK_SOLO: ok = copy_into(doc, cur, u->tags[num - 1].tmpl, true) != NULL; break;
        default: ok = false; /* check_target ran first: cannot happen */
        }
    }
    app_doc_buf_free(&b);
    return ok;
}

static void free_children(xmlNodePtr n) {
    xmlNodePtr c = n->children;
    while (c != NULL) {
        xmlNodePtr next = c->next;
        xmlUnlinkNode(c);
        xmlFreeNode(c);
        c = next;
    }
}

/* A new <target> after <source> (and <seg-source>), indented like <source>. */
static xmlNodePtr make_target(xmlDocPtr doc, xl_unit *u) {
    xmlNodePtr anchor = u->source;
    for (xmlNodePtr n = u->source->next; n != NULL; n = n->next) {
        if (n->type != XML_ELEMENT_NODE) continue;
        if (is_xl(n, "seg-source")) anchor = n;
        break;
    }
    xmlNodePtr t = xmlNewDocNode(doc, u->source->ns, BAD_CAST "target", NULL);
    if (t == NULL) return NULL;
    if (xmlAddNextSibling(anchor, t) == NULL) {
        xmlFreeNode(t);
        return NULL;
    }
    /* the indentation goes between anchor and target; t->prev is an
    ** element, so libxml2 does not merge the text into a neighbour */
    xmlNodePtr ws = u->source->prev;
    if (ws && ws->type == XML_TEXT_NODE && xmlIsBlankNode(ws)) {
        xmlNodePtr w = xmlNewDocText(doc, ws->content);
        if (w == NULL || xmlAddPrevSibling(t, w) == NULL) xmlFreeNode(w); /* cosmetic only */
    }
    return t;
}

static mt_status xl_set_target(app_doc *d, int64_t i, int form, const char *text) {
    xl_doc *x = d->impl;
    xl_unit *u = &x->units[i];
    (void)form;
    mt_status rc = check_target(d, i, u, text);
    if (rc != MT_OK) return rc;
    if (u->target == NULL) {
        u->target = make_target(x->doc, u);
        if (u->target == NULL) return nomem(d);
    }
    /* build into a scratch child of the target (namespaces in scope), then
    ** swap: the old content stays until the new one is complete */
    xmlNodePtr scratch = xmlNewDocNode(x->doc, u->target->ns, BAD_CAST "scratch", NULL);
    if (scratch == NULL || xmlAddChild(u->target, scratch) == NULL) {
        xmlFreeNode(scratch);
        return nomem(d);
    }
    if (!build_content(x->doc, u, scratch, text)) {
        xmlUnlinkNode(scratch);
        xmlFreeNode(scratch);
        return nomem(d);
    }
    xmlUnlinkNode(scratch);
    free_children(u->target);
    while (scratch->children) {
        xmlNodePtr c = scratch->children;
        xmlUnlinkNode(c);
        xmlAddChild(u->target, c);
    }
    xmlFreeNode(scratch);
    return MT_OK;
}

/* ------------------------------------------------------------------ save */

static bool set_attr(xmlNodePtr n, const char *name, const char *value) {
    return xmlSetProp(n, BAD_CAST name, BAD_CAST value) != NULL;
}

static mt_status apply_state(app_doc *d, xl_unit *u, app_doc_state st, app_doc_save_params p) {
    bool ok = true;
    if (u->target == NULL) return MT_OK; /* an EMPTY unit that never had a target */
    switch (st) {
    case APP_DOC_STATE_CONFIRMED:
        ok = set_attr(u->target, "state", "translated") && set_attr(u->tu, "approved", "yes");
        xmlUnsetProp(u->target, BAD_CAST "state-qualifier");
        break;
    case APP_DOC_STATE_DRAFT:
        ok = set_attr(u->target, "state",
                      p.draft_as_fuzzy ? "needs-review-translation" : "translated") &&
             set_attr(u->target, "state-qualifier", "mt-suggestion");
        if (ok && xmlHasProp(u->tu, BAD_CAST "approved")) ok = set_attr(u->tu, "approved", "no");
        break;
    case APP_DOC_STATE_EMPTY:
        ok = set_attr(u->target, "state", "needs-translation");
        xmlUnsetProp(u->target, BAD_CAST "state-qualifier");
        if (ok && xmlHasProp(u->tu, BAD_CAST "approved")) ok = set_attr(u->tu, "approved", "no");
        break;
    }
    return ok ? MT_OK : nomem(d);
}

static int write_cb(void *ctx, const char *buf, int len) {
    app_doc_buf *b = ctx;
    app_doc_buf_put(b, buf, (size_t)len);
    return b->failed ? -1 : len;
}

static int close_cb(void *ctx) {
    (void)ctx;
    return 0;
}

/* The form of the original file, kept on save (libxml2 normalises CRLF
** to LF, and writes its own declaration, and none for a UTF-16 file it
** did not recognise as declared): code unit width and byte order, BOM,
** the declaration and the blanks after it verbatim, CRLF or LF, and a
** final line end or not. */
typedef struct xl_form {
    int unit;        /* 1, or 2 for UTF-16                              */
    bool be;         /* UTF-16 big-endian                               */
    size_t bom;      /* bytes of byte-order mark                        */
    size_t prolog;   /* bytes of BOM + declaration + blanks after it    */
    bool crlf;       /* the first line ends in CRLF                     */
    bool final_eol;  /* the file ends with a line end                   */
    const char *enc; /* encoding to serialise the body in               */
} xl_form;

static unsigned unit_at(const xl_form *f, const char *s, size_t i) {
    const unsigned char *p = (const unsigned char *)s + i * (size_t)f->unit;
    if (f->unit == 1) return p[0];
    return f->be ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0];
}

static void put_unit(const xl_form *f, app_doc_buf *b, unsigned u) {
    char c[2];
    if (f->unit == 1) {
        app_doc_buf_putc(b, (char)u);
        return;
    }
    c[f->be ? 0 : 1] = (char)(u >> 8);
    c[f->be ? 1 : 0] = (char)(u & 0xff);
    app_doc_buf_put(b, c, 2);
}

static xl_form original_form(const app_doc *d, const xl_doc *x) {
    const unsigned char *r = (const unsigned char *)d->raw;
    size_t len = d->raw_len;
    xl_form f = {1, false, 0, 0, false, false, NULL};
    if (len >= 3 && memcmp(r, "\xef\xbb\xbf", 3) == 0) {
        f.bom = 3;
    } else if (len >= 2 && ((r[0] == 0xff && r[1] == 0xfe) || (r[0] == 0xfe && r[1] == 0xff))) {
        f.unit = 2, f.be = r[0] == 0xfe, f.bom = 2;
    } else if (len >= 2 && r[0] == '<' && r[1] == 0) {
        f.unit = 2;
    } else if (len >= 2 && r[0] == 0 && r[1] == '<') {
        f.unit = 2, f.be = true;
    }
    size_t n = len / (size_t)f.unit, i = f.bom / (size_t)f.unit;
    static const char decl[] = "<?xml";
    bool has_decl = n - i >= 5;
    for (size_t k = 0; has_decl && k < 5; k++)
        has_decl = unit_at(&f, d->raw, i + k) == (unsigned char)decl[k];
    f.prolog = f.bom;
    if (has_decl) {
        size_t k = i + 5;
        while (k + 1 < n && !(unit_at(&f, d->raw, k) == '?' && unit_at(&f, d->raw, k + 1) == '>'))
            k++;
        k += 2;
        while (k < n && (unit_at(&f, d->raw, k) == ' ' || unit_at(&f, d->raw, k) == '\t' ||
                         unit_at(&f, d->raw, k) == '\r' || unit_at(&f, d->raw, k) == '\n'))
            k++;
        f.prolog = k <= n ? k * (size_t)f.unit : f.bom;
    }
    for (size_t k = i; k < n; k++)
        if (unit_at(&f, d->raw, k) == '\n') {
            f.crlf = k > 0 && unit_at(&f, d->raw, k - 1) == '\r';
            break;
        }
    f.final_eol = n > 0 && unit_at(&f, d->raw, n - 1) == '\n';
    if (f.unit == 2)
        f.enc = f.be ? "UTF-16BE" : "UTF-16LE";
    else
        f.enc = x->doc->encoding ? (const char *)x->doc->encoding : "UTF-8";
    return f;
}

static mt_status xl_save(app_doc *d, FILE *f, app_doc_save_params p) {
    xl_doc *x = d->impl;
    bool any = false;
    for (int64_t i = 0; i < d->n_segs; i++) {
        if (!d->segs[i].changed) continue;
        any = true;
        mt_status rc = apply_state(d, &x->units[i], d->segs[i].state, p);
        if (rc != MT_OK) return rc;
    }
    if (!any) {
        fwrite(d->raw, 1, d->raw_len, f);
        return MT_OK;
    }
    xl_form form = original_form(d, x);
    app_doc_buf body = {0}, out = {0};
    app_xml_errors er;
    app_xml_errors_begin(&er);
    /* the body without a declaration: the original one is copied */
    xmlSaveCtxtPtr sc = xmlSaveToIO(write_cb, close_cb, &body, form.enc, XML_SAVE_NO_DECL);
    long r = -1;
    if (sc != NULL) {
        r = xmlSaveDoc(sc, x->doc);
        long c = xmlSaveClose(sc);
        if (c < 0) r = -1;
    }
    app_xml_errors_end(&er);
    mt_status rc = MT_OK;
    if (r < 0 || body.failed) {
        rc = body.failed ? nomem(d)
                         : mt_seterr(MT_ERR_IO, "cannot write XLIFF '%s': %s", d->path,
                                     er.msg[0] ? er.msg : "serialisation failed");
        goto done;
    }
    app_doc_buf_put(&out, d->raw, form.prolog);
    size_t n = body.len / (size_t)form.unit, k = 0;
    if (n > 0 && unit_at(&form, body.data, 0) == 0xfeff) k = 1; /* the encoder's own BOM */
    if (!form.final_eol)
        while (n > k && unit_at(&form, body.data, n - 1) == '\n')
            n--;
    for (; k < n; k++) {
        unsigned u = unit_at(&form, body.data, k);
        if (u == '\n' && form.crlf) put_unit(&form, &out, '\r');
        put_unit(&form, &out, u);
    }
    if (out.failed) {
        rc = nomem(d);
        goto done;
    }
    fwrite(out.data, 1, out.len, f);
done:
    app_doc_buf_free(&body);
    app_doc_buf_free(&out);
    return rc;
}

static void xl_free(app_doc *d) {
    xl_doc *x = d->impl;
    if (x == NULL) return;
    for (int64_t i = 0; i < x->n_units; i++) {
        for (int k = 0; k < x->units[i].n_tags; k++)
            if (x->units[i].tags[k].owned) xmlFreeNode(x->units[i].tags[k].tmpl);
        mt_free(x->units[i].tags);
    }
    mt_free(x->units);
    if (x->doc) xmlFreeDoc(x->doc);
    mt_free(x);
    d->impl = NULL;
}

static const app_doc_ops xl_ops = {xl_set_target, xl_save, xl_free};

/* ------------------------------------------------------------------ open */

static mt_status read_unit(app_doc *d, xl_doc *x, xmlNodePtr tu) {
    mt_status rc;
    xmlNodePtr source = NULL, target = NULL;
    app_doc_buf notes = {0}, b = {0};
    bool *used = NULL;
    for (xmlNodePtr c = tu->children; c != NULL; c = c->next) {
        /* a second <source> or <target> is invalid XLIFF 1.2 and ambiguous:
        ** which one is the text?  (a new target would land between two
        ** sources.)  Refused, naming both lines */
        xmlNodePtr *have = is_xl(c, "source") ? &source : is_xl(c, "target") ? &target : NULL;
        if (have != NULL && *have != NULL) {
            rc = mt_seterr(MT_ERR_FORMAT,
                           "%s:%ld: second <%s> in trans-unit (the first is at line %ld); a "
                           "trans-unit has one",
                           d->path, xmlGetLineNo(c), (const char *)c->name, xmlGetLineNo(*have));
            goto fail;
        }
        if (have != NULL) *have = c;
        if (is_xl(c, "note")) {
            xmlChar *t = xmlNodeGetContent(c);
            if (notes.len) app_doc_buf_putc(&notes, '\n');
            if (t) app_doc_buf_puts(&notes, (const char *)t);
            xmlFree(t);
        }
    }
    if (source == NULL) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s:%ld: trans-unit without <source>", d->path,
                       xmlGetLineNo(tu));
        goto fail;
    }
    rc = MT_ERR_NOMEM;
    if (x->n_units == x->cap_units) {
        int64_t cap = x->cap_units ? 2 * x->cap_units : 64;
        xl_unit *nu = mt_try_realloc(x->units, (size_t)cap * sizeof *nu);
        if (nu == NULL) goto nomem;
        x->units = nu;
        x->cap_units = cap;
    }
    xl_unit *u = &x->units[x->n_units++];
    memset(u, 0, sizeof *u);
    u->tu = tu;
    u->source = source;
    u->target = target;
    app_doc_segment *s;
    rc = app_doc_add_segment(d, 1, &s);
    if (rc != MT_OK) goto fail;
    s->line = xmlGetLineNo(tu);
    rc = flatten(d, u, source, &b, NULL);
    if (rc != MT_OK) goto fail;
    u->n_src_tags = u->n_tags;
    s->source = app_doc_strdup(d, b.data ? b.data : "", b.len);
    if (s->source == NULL) goto nomem;
    xmlChar *ctx = xmlGetProp(tu, BAD_CAST "resname");
    if (ctx == NULL) ctx = xmlGetProp(tu, BAD_CAST "id");
    if (ctx) {
        s->context = app_doc_strdup(d, (const char *)ctx, strlen((const char *)ctx));
        xmlFree(ctx);
        if (s->context == NULL) goto nomem;
    }
    if (notes.failed) goto nomem;
    if (notes.len && (s->note = app_doc_strdup(d, notes.data, notes.len)) == NULL) goto nomem;
    if (target != NULL) {
        b.len = 0;
        used = mt_try_calloc((size_t)u->n_src_tags + 1, sizeof *used);
        if (used == NULL) goto nomem;
        rc = flatten(d, u, target, &b, used);
        if (rc != MT_OK) goto fail;
        if (b.len) {
            char *t = mt_try_strdup(b.data);
            if (t == NULL) goto nomem;
            mt_free(s->targets[0]);
            s->targets[0] = t;
            xmlChar *st = xmlGetProp(target, BAD_CAST "state");
            bool confirmed = st == NULL || xmlStrEqual(st, BAD_CAST "translated") ||
                             xmlStrEqual(st, BAD_CAST "signed-off") ||
                             xmlStrEqual(st, BAD_CAST "final") || prop_is(tu, "approved", "yes");
            xmlFree(st);
            s->state = confirmed ? APP_DOC_STATE_CONFIRMED : APP_DOC_STATE_DRAFT;
        }
    }
    rc = MT_OK;
    goto done;
nomem:
    rc = nomem(d);
fail:
done:
    mt_free(used);
    app_doc_buf_free(&notes);
    app_doc_buf_free(&b);
    return rc;
}

static mt_status walk(app_doc *d, xl_doc *x, xmlNodePtr parent) {
    for (xmlNodePtr c = parent->children; c != NULL; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || prop_is(c, "translate", "no")) continue;
        mt_status rc = MT_OK;
        if (is_xl(c, "trans-unit"))
            rc = read_unit(d, x, c);
        else if (is_xl(c, "group") || is_xl(c, "body"))
            rc = walk(d, x, c);
        if (rc != MT_OK) return rc;
    }
    return MT_OK;
}

/* Trans-unit ids are unique within a <file> (XLIFF 1.2); tools merge the
** translation back by id, so a file with one id twice is refused, naming
** both lines, rather than saved with two units the next tool confuses. */
typedef struct xl_id {
    xmlChar *id;
    long line;
} xl_id;

static int id_cmp(const void *pa, const void *pb) {
    const xl_id *a = pa, *b = pb;
    int c = xmlStrcmp(a->id, b->id);
    return c ? c : (a->line > b->line) - (a->line < b->line);
}

static mt_status check_ids(app_doc *d, const xl_doc *x, int64_t from) {
    int64_t n = x->n_units - from, k = 0;
    if (n < 2) return MT_OK;
    xl_id *v = mt_try_calloc((size_t)n, sizeof *v);
    if (v == NULL) return nomem(d);
    mt_status rc = MT_OK;
    for (int64_t i = from; i < x->n_units; i++) {
        xmlChar *id = xmlGetProp(x->units[i].tu, BAD_CAST "id");
        if (id != NULL) v[k++] = (xl_id){id, xmlGetLineNo(x->units[i].tu)};
    }
    qsort(v, (size_t)k, sizeof *v, id_cmp);
    const xl_id *dup = NULL, *first = NULL;
    for (int64_t i = 1; i < k; i++)
        if (xmlStrEqual(v[i - 1].id, v[i].id) && (dup == NULL || v[i].line < dup->line)) {
            dup = &v[i];
            first = &v[i - 1];
        }
    if (dup != NULL)
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s:%ld: duplicate trans-unit id \"%.40s\" (first at line %ld); ids are "
                       "unique within a <file>",
                       d->path, dup->line, (const char *)dup->id, first->line);
    for (int64_t i = 0; i < k; i++)
        xmlFree(v[i].id);
    mt_free(v);
    return rc;
}

static mt_status copy_lang(app_doc *d, xmlNodePtr file, const char *attr, char **out) {
    xmlChar *v = xmlGetProp(file, BAD_CAST attr);
    if (v == NULL) return MT_OK;
    *out = mt_try_strdup((const char *)v);
    xmlFree(v);
    return *out ? MT_OK : nomem(d);
}

mt_status app_doc_xliff_open(app_doc *d) {
    mt_status rc;
    xl_doc *x = mt_try_calloc(1, sizeof *x);
    if (x == NULL) return nomem(d);
    d->ops = &xl_ops;
    d->impl = x;
    rc = app_xml_parse(d->path, d->raw, d->raw_len, NULL, "", &x->doc);
    if (rc != MT_OK) return rc == MT_ERR_NOMEM ? nomem(d) : rc;
    xmlNodePtr root = xmlDocGetRootElement(x->doc);
    if (!is_xl(root, "xliff"))
        return mt_seterr(MT_ERR_FORMAT, "%s:%ld: root element is <%s>, not <xliff>", d->path,
                         root ? xmlGetLineNo(root) : 1L, root ? (const char *)root->name : "");
    xmlChar *ver = xmlGetProp(root, BAD_CAST "version");
    bool v1 = ver == NULL || ver[0] == '1';
    if (!v1) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED, "%s: XLIFF version %s is not supported (only 1.2)",
                       d->path, (const char *)ver);
        xmlFree(ver);
        return rc;
    }
    xmlFree(ver);
    bool first = true;
    for (xmlNodePtr f = root->children; f != NULL; f = f->next) {
        if (!is_xl(f, "file")) continue;
        if (first) {
            rc = copy_lang(d, f, "source-language", &d->src_lang);
            if (rc == MT_OK) rc = copy_lang(d, f, "target-language", &d->trg_lang);
            if (rc != MT_OK) return rc;
            first = false;
        }
        if (prop_is(f, "translate", "no")) continue;
        int64_t from = x->n_units;
        rc = walk(d, x, f);
        if (rc == MT_OK) rc = check_ids(d, x, from);
        if (rc != MT_OK) return rc;
    }
    if (first) return mt_seterr(MT_ERR_FORMAT, "%s: XLIFF without a <file> element", d->path);
    return MT_OK;
}
