/* The per-launch passes of the Nsight Systems reader, compiled (timeline/native.py is their Python face; each stands in
 * for Python or SQL that stays the fallback and the reference it is tested against, tests/timeline/test_native.py):
 *   - the NVTX segment sweep (timeline/nvtx._segments), on ranges read and interned here;
 *   - the per-op attribution of one slice of kernels (timeline/nvtx._attribute_slice's SQL);
 *   - the busy-time union (timeline/busy.busy_part's loop; busy_time's plan, sorts and loops at once), and for a
 *     whole capture its kernels' islands taken by the attribution as it reads them, merged with the rest's (busy_runs);
 *   - the int64 columns of the per-step series (timeline/series_np._read's fetchmany), its GPU rows assigned to steps
 *     and summed (series_np._gpu_rows and _gpu_side's numpy), the islands of its unions and the sweep of its time
 *     budget's parts (series_np._islands, _cut, _claimed).
 *
 * Why: every launch is joined to its launch call by correlation id and looked up in its thread's NVTX segments. In
 * SQL that is an automatic index built on the launch calls, a seek per kernel, two correlated subqueries and an
 * upsert per launch: about 2 us per launch, twice the GROUP BY floor before any range is looked at; and the busy
 * time's Python loop over every interval cost more than the whole floor. Here the launch calls of a slice are read
 * once in rowid order, each labelled at once (its own thread's segment, else its process's main thread's: the rules
 * of the SQL) and kept in a hash table of correlation ids; the kernels are then read once in rowid order, matched
 * and summed into a small table of groups. A value that is not an integer (or, for range names, text) makes a pass
 * decline: the Python path decides what such a capture means.
 *
 * No sqlite3.h is needed to build this (a fresh machine has Python's headers and a C compiler, not libsqlite3-dev):
 * the handful of SQLite C API functions used are declared below (their ABI is stable since SQLite 3.0) and looked
 * up at import in the libsqlite3 that Python's own sqlite3 module has loaded.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_value sqlite3_value;
#define SQLITE_OK 0
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_INTEGER 1
#define SQLITE_TEXT 3
#define SQLITE_NULL 5
#define SQLITE_OPEN_READONLY 0x00000001
#define SQLITE_OPEN_URI 0x00000040
#define SQLITE_OPEN_NOMUTEX 0x00008000

static struct {
    int (*open_v2)(const char *, sqlite3 **, int, const char *);
    int (*close)(sqlite3 *);
    int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
    int (*step)(sqlite3_stmt *);
    int (*finalize)(sqlite3_stmt *);
    int (*column_type)(sqlite3_stmt *, int);
    int (*column_count)(sqlite3_stmt *);
    const char *(*errmsg)(sqlite3 *);
    int (*bind_int64)(sqlite3_stmt *, int, int64_t);
    int (*bind_null)(sqlite3_stmt *, int);
    const unsigned char *(*column_text)(sqlite3_stmt *, int);
    int (*column_bytes)(sqlite3_stmt *, int);
    void (*progress_handler)(sqlite3 *, int, int (*)(void *), void *);
    sqlite3_value *(*column_value)(sqlite3_stmt *, int);
    int (*value_type)(sqlite3_value *);
    int64_t (*value_int64)(sqlite3_value *);
} S;

/* Each connection opened here is used by the one thread that opened it: no mutex on it (multi-thread mode). In the
 * default serialized mode every sqlite3_column_* call takes and leaves the connection's mutex — measured on a 2M-launch
 * capture, 13% of the attribution pass. */
#define OPEN_FLAGS (SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX)

static int bind_sqlite(void *lib) {
#define FIND(field, name) if (!(*(void **)&S.field = dlsym(lib, name))) return -1;
    FIND(open_v2, "sqlite3_open_v2") FIND(close, "sqlite3_close") FIND(prepare_v2, "sqlite3_prepare_v2")
    FIND(step, "sqlite3_step") FIND(finalize, "sqlite3_finalize")
    FIND(column_type, "sqlite3_column_type") FIND(column_count, "sqlite3_column_count") FIND(errmsg, "sqlite3_errmsg")
    FIND(bind_int64, "sqlite3_bind_int64") FIND(bind_null, "sqlite3_bind_null")
    FIND(column_text, "sqlite3_column_text") FIND(column_bytes, "sqlite3_column_bytes")
    FIND(progress_handler, "sqlite3_progress_handler")
    FIND(column_value, "sqlite3_column_value") FIND(value_type, "sqlite3_value_type")
    FIND(value_int64, "sqlite3_value_int64")
#undef FIND
    return 0;
}

/* ---- errors: a message for RuntimeError, or "unsupported" (a value that is not an integer or NULL: the SQL path
 * decides what such a capture means) ---- */
typedef struct { char msg[512]; int unsupported; } Err;

static int sql_error(Err *err, sqlite3 *db, const char *what) {
    snprintf(err->msg, sizeof err->msg, "%s: %s", what, db ? S.errmsg(db) : "cannot open");
    return -1;
}

/* ---- the budget of each connection opened here (timeline/guard.py, as for the Python connections): every `grain`
 * VM instructions the Python Budget is called, with the GIL taken back for it. It counts, and stops the query past
 * the budget (its `pending` says why: timeline/native.py raises it); and a pending SIGTERM / SIGINT's Python handler
 * runs there (PyErr_CheckSignals: the passes run in the main thread, with the GIL released), so a signal ends a
 * compiled query within about a millisecond too. What the handler raised (errors.Terminated, KeyboardInterrupt) is
 * kept, and the call raises it itself, in place of SQLite's "interrupted". ---- */
typedef struct { PyObject *budget; int grain; PyObject *type, *value, *tb; } Guard;

static int guard_step(void *p) {
    Guard *g = p;
    PyGILState_STATE gil = PyGILState_Ensure();
    int stop = 1;
    if (!g->type) {
        PyObject *r = PyErr_CheckSignals() < 0 ? NULL : PyObject_CallNoArgs(g->budget);
        if (r) {
            stop = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (stop < 0) { PyErr_Clear(); stop = 1; }
        } else {
            PyErr_Fetch(&g->type, &g->value, &g->tb);
        }
    }
    PyGILState_Release(gil);
    return stop != 0;
}

static void guard_on(sqlite3 *db, Guard *g) {
    if (db && g->budget && g->budget != Py_None && g->grain > 0) S.progress_handler(db, g->grain, guard_step, g);
}

/* With the GIL: 1 (the kept exception set as the call's error) when a signal's handler raised in a query. */
static int guard_raised(Guard *g) {
    if (!g->type) return 0;
    PyErr_Restore(g->type, g->value, g->tb);
    g->type = g->value = g->tb = NULL;
    return 1;
}

/* ---- one value of a row: integer or NULL ----
 * Each value is fetched once (sqlite3_column_value) and its type and integer read from it: sqlite3_column_type and
 * sqlite3_column_int64 each go through the statement's column lookup and API exit checks, which cost a fifth of the
 * attribution pass (measured, 2M launches). The value is unprotected: safe here, where one thread uses the
 * connection (OPEN_FLAGS) and reads it before the next step. */
typedef struct { int64_t v; int null; } Val;

static int read_row_at(sqlite3_stmt *st, int i, Val *out, Err *err) {
    sqlite3_value *x = S.column_value(st, i);
    int t = S.value_type(x);
    if (t == SQLITE_NULL) { out->v = 0; out->null = 1; return 0; }
    if (t != SQLITE_INTEGER) { err->unsupported = 1; snprintf(err->msg, sizeof err->msg, "column %d", i); return -1; }
    out->v = S.value_int64(x);
    out->null = 0;
    return 0;
}

static int read_row(sqlite3_stmt *st, Val *out, int n, Err *err) {
    for (int i = 0; i < n; i++)
        if (read_row_at(st, i, &out[i], err) < 0) return -1;
    return 0;
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}

/* ---- segments: each thread's time line cut where its (scope, op) label changes, sorted by (tid, s) ---- */
typedef struct { int64_t tid; size_t lo, hi, last; } Thread;
/* lab: the segment's label id, -1 for none (12 bytes a segment: a day-long job's 2.5M ranges cut its threads into
 * ~5M segments, held through the whole attribution) */
typedef struct { int64_t *s; int32_t *lab; size_t n; Thread *threads; size_t nthreads; } Segments;
/* the sweep's boundaries as it emits them (20 bytes each, in three arrays; the tids become Segments' threads) */
typedef struct { int64_t *tid, *s; int32_t *lab; size_t n, cap; } Bounds;
typedef struct { int64_t tid, s; int32_t lab; } Bound;  /* one boundary, to sort them where they come unsorted */
typedef struct { int64_t *p, *tid; size_t n; } Mains;  /* each process's main thread (nvw.main) */

static void segments_free(Segments *g) {
    if (!g) return;
    free(g->s); free(g->lab); free(g->threads);
    free(g);
}

static void bounds_free(Bounds *b) {
    free(b->tid); free(b->s); free(b->lab);
    b->tid = b->s = NULL; b->lab = NULL; b->n = b->cap = 0;
}

static int bounds_push(Bounds *b, int64_t tid, int64_t s, int32_t lab) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        int64_t *t = realloc(b->tid, cap * sizeof *t);
        if (!t) return -1;
        b->tid = t;
        int64_t *u = realloc(b->s, cap * sizeof *u);
        if (!u) return -1;
        b->s = u;
        int32_t *l = realloc(b->lab, cap * sizeof *l);
        if (!l) return -1;
        b->lab = l; b->cap = cap;
    }
    b->tid[b->n] = tid; b->s[b->n] = s; b->lab[b->n++] = lab;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q; *cap = c;
    return 0;
}

static int bound_cmp(const void *a, const void *b) {
    const Bound *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* The segments of boundaries in any order; NULL when two share a thread and start (the SQL's primary key refuses
 * them: the SQL path says what that is) or memory ran out (*oom set). Takes the boundaries' arrays (their starts and
 * labels become the segments', with no copy: a copy held both at once, 20M launches' sweep peaked at 345 MB). */
static Segments *segments_of(Bounds *b, int *oom) {
    size_t n = b->n;
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = b->tid[i - 1] < b->tid[i] || (b->tid[i - 1] == b->tid[i] && b->s[i - 1] < b->s[i]);
    Segments *g = calloc(1, sizeof *g);
    if (!g) goto oom;
    if (!sorted) {  /* the sweep emits each thread's boundaries in time order: not seen */
        Bound *t = malloc((n + 1) * sizeof *t);
        if (!t) goto oom;
        for (size_t i = 0; i < n; i++) t[i] = (Bound){b->tid[i], b->s[i], b->lab[i]};
        qsort(t, n, sizeof *t, bound_cmp);
        for (size_t i = 0; i < n; i++) { b->tid[i] = t[i].tid; b->s[i] = t[i].s; b->lab[i] = t[i].lab; }
        free(t);
    }
    size_t tcap = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && b->tid[i] == b->tid[i - 1] && b->s[i] == b->s[i - 1]) { bounds_free(b); segments_free(g); return NULL; }
        if (!g->nthreads || g->threads[g->nthreads - 1].tid != b->tid[i]) {
            if (grow((void **)&g->threads, &tcap, g->nthreads + 1, sizeof *g->threads)) goto oom;
            g->threads[g->nthreads++] = (Thread){b->tid[i], i, i, i};
        }
        g->threads[g->nthreads - 1].hi = i + 1;
    }
    /* the arrays' spare room given back (their capacity doubled as they grew) */
    int64_t *s = n ? realloc(b->s, n * sizeof *s) : NULL;
    int32_t *lab = n ? realloc(b->lab, n * sizeof *lab) : NULL;
    g->s = s ? s : b->s; g->lab = lab ? lab : b->lab; g->n = n;
    free(b->tid);
    b->tid = b->s = NULL; b->lab = NULL; b->n = b->cap = 0;
    return g;
oom:
    bounds_free(b); segments_free(g); *oom = 1;
    return NULL;
}

/* ---- the NVTX segment sweep (timeline/nvtx._segments, whose Python loop this is, line for line) ----
 * Ranges are read in the sweep's order (thread, start, the longest first) with their names interned; the caller
 * gives each name's op and each op's kind (a layer range, torch.profiler's step range); the sweep labels each
 * moment with a (scope, op) pair of op ids, numbered in the order the Python sweep would first meet them. */
typedef struct { int64_t tid, p, sum; char p_null; } Total;  /* a thread's ranges: its process, their length */
typedef struct { int64_t *tid, *s, *e; int32_t *name; size_t n, cap; char **text; Py_ssize_t *len; int32_t nnames,
                 tcap; int32_t *slot; size_t slots; Total *totals; size_t ntotals, totcap; } Ranges;

static void ranges_free(Ranges *r) {
    if (!r) return;
    free(r->tid); free(r->s); free(r->e); free(r->name);
    for (int32_t i = 0; i < r->nnames; i++) free(r->text[i]);
    free(r->text); free(r->len); free(r->slot); free(r->totals);
    free(r);
}

static uint64_t bytes_hash(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

/* The name's index (NULL: index of a NULL name, text NULL), added when new; -1 when memory ran out. */
static int32_t intern(Ranges *r, const unsigned char *text, size_t n) {
    if (r->nnames * 2 + 2 > (int64_t)r->slots) {  /* open addressing over the names, kept half empty */
        size_t slots = r->slots ? r->slots * 2 : 1024;
        int32_t *slot = malloc(slots * sizeof *slot);
        if (!slot) return -1;
        memset(slot, 0xff, slots * sizeof *slot);
        for (int32_t i = 0; i < r->nnames; i++) {
            if (!r->text[i]) continue;
            size_t j = bytes_hash((unsigned char *)r->text[i], r->len[i]) & (slots - 1);
            while (slot[j] >= 0) j = (j + 1) & (slots - 1);
            slot[j] = i;
        }
        free(r->slot); r->slot = slot; r->slots = slots;
    }
    if (!text) {
        for (int32_t i = 0; i < r->nnames; i++) if (!r->text[i]) return i;
    } else {
        size_t j = bytes_hash(text, n) & (r->slots - 1);
        for (; r->slot[j] >= 0; j = (j + 1) & (r->slots - 1)) {
            int32_t i = r->slot[j];
            if ((size_t)r->len[i] == n && !memcmp(r->text[i], text, n)) return i;
        }
        r->slot[j] = r->nnames;
    }
    if (r->nnames >= r->tcap) {
        int32_t cap = r->tcap ? r->tcap * 2 : 64;
        char **t = realloc(r->text, cap * sizeof *t);
        if (!t) return -1;
        r->text = t;
        Py_ssize_t *l = realloc(r->len, cap * sizeof *l);
        if (!l) return -1;
        r->len = l; r->tcap = cap;
    }
    char *copy = NULL;
    if (text) {
        if (!(copy = malloc(n + 1))) return -1;
        memcpy(copy, text, n); copy[n] = 0;
    }
    r->text[r->nnames] = copy; r->len[r->nnames] = (Py_ssize_t)n;
    return r->nnames++;
}


static Ranges *ranges_read(const char *uri, const char *sql, Guard *gd, Err *err) {
    sqlite3 *db = NULL; sqlite3_stmt *st = NULL;
    Ranges *r = calloc(1, sizeof *r);
    int rc;
    Val v[3], p;
    const int64_t far = (int64_t)1 << 62;
    if (!r) goto oom;
    if (S.open_v2(uri, &db, OPEN_FLAGS, NULL) != SQLITE_OK) {
        sql_error(err, db, "ranges"); goto fail;
    }
    guard_on(db, gd);
    if (S.prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) { sql_error(err, db, "ranges"); goto fail; }
    while ((rc = S.step(st)) == SQLITE_ROW) {
        if (read_row(st, v, 3, err) < 0) goto fail;
        if (v[0].null || v[1].null || v[2].null || v[1].v < -far || v[1].v > far || v[2].v < -far || v[2].v > far) {
            err->unsupported = 1; goto fail;  /* the query keeps only closed ranges of a thread: never here */
        }
        int t = S.column_type(st, 3);
        if (t != SQLITE_TEXT && t != SQLITE_NULL) { err->unsupported = 1; goto fail; }
        const unsigned char *text = t == SQLITE_TEXT ? S.column_text(st, 3) : NULL;
        int32_t name = intern(r, text, text ? (size_t)S.column_bytes(st, 3) : 0);
        if (name < 0) goto oom;
        if (read_row_at(st, 4, &p, err) < 0) goto fail;
        if (!r->ntotals || r->totals[r->ntotals - 1].tid != v[0].v) {  /* rows come by thread */
            if (grow((void **)&r->totals, &r->totcap, r->ntotals + 1, sizeof *r->totals)) goto oom;
            r->totals[r->ntotals++] = (Total){v[0].v, p.v, 0, (char)p.null};
        }
        if (__builtin_add_overflow(r->totals[r->ntotals - 1].sum, v[2].v - v[1].v, &r->totals[r->ntotals - 1].sum)) {
            err->unsupported = 1; goto fail;  /* SQLite's SUM raises there: the Python path says so */
        }
        if (r->n == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 4096;
            int64_t *a = realloc(r->tid, cap * 8), *b, *c;
            if (!a) goto oom;
            r->tid = a;
            if (!(b = realloc(r->s, cap * 8))) goto oom;
            r->s = b;
            if (!(c = realloc(r->e, cap * 8))) goto oom;
            r->e = c;
            int32_t *d = realloc(r->name, cap * 4);
            if (!d) goto oom;
            r->name = d; r->cap = cap;
        }
        r->tid[r->n] = v[0].v; r->s[r->n] = v[1].v; r->e[r->n] = v[2].v; r->name[r->n++] = name;
    }
    if (rc != SQLITE_DONE) { sql_error(err, db, "ranges"); goto fail; }
    S.finalize(st); S.close(db);
    return r;
oom:
    snprintf(err->msg, sizeof err->msg, "out of memory");
fail:
    if (st) S.finalize(st);
    if (db) S.close(db);
    ranges_free(r);
    return NULL;
}

/* An open range, as timeline/nvtx._open keeps it: op, the innermost layer range below and its own, the outermost
 * non-step range, the bottom range (op ids, -1 for None), and its label (a pair index). */
typedef struct { int64_t seq; int32_t op, layer, outer, bottom, lab; } Open;
typedef struct { int32_t scope, op; } Pair;
typedef struct {
    const int32_t *name_op; const char *is_layer, *is_step;
    Pair *pairs; size_t npairs, pcap; int32_t *pslot; size_t pslots;
} Labels;

static int32_t label_of(Labels *L, int32_t scope, int32_t op) {
    if (L->npairs * 2 + 2 > L->pslots) {
        size_t slots = L->pslots ? L->pslots * 2 : 256;
        int32_t *slot = malloc(slots * sizeof *slot);
        if (!slot) return -2;
        memset(slot, 0xff, slots * sizeof *slot);
        for (size_t i = 0; i < L->npairs; i++) {
            size_t j = mix(((uint64_t)(uint32_t)L->pairs[i].scope << 32) | (uint32_t)L->pairs[i].op) & (slots - 1);
            while (slot[j] >= 0) j = (j + 1) & (slots - 1);
            slot[j] = (int32_t)i;
        }
        free(L->pslot); L->pslot = slot; L->pslots = slots;
    }
    size_t j = mix(((uint64_t)(uint32_t)scope << 32) | (uint32_t)op) & (L->pslots - 1);
    for (; L->pslot[j] >= 0; j = (j + 1) & (L->pslots - 1)) {
        Pair p = L->pairs[L->pslot[j]];
        if (p.scope == scope && p.op == op) return L->pslot[j];
    }
    if (grow((void **)&L->pairs, &L->pcap, L->npairs + 1, sizeof *L->pairs)) return -2;
    L->pairs[L->npairs] = (Pair){scope, op};
    L->pslot[j] = (int32_t)L->npairs;
    return (int32_t)L->npairs++;
}

static int open_range(Labels *L, int64_t seq, int32_t op, const Open *below, Open *out) {
    int32_t layer = L->is_layer[op] ? op : (below ? below->layer : -1);
    int32_t outer = below && below->outer >= 0 ? below->outer : (L->is_step[op] ? -1 : op);
    int32_t bottom = below ? below->bottom : op;
    int32_t lab = label_of(L, layer >= 0 ? layer : outer >= 0 ? outer : bottom, op);
    if (lab < 0) return -1;
    *out = (Open){seq, op, layer, outer, bottom, lab};
    return 0;
}

typedef struct { int64_t e, negseq; } End;  /* heapq's (e, -seq): the smallest first */

static int end_less(End a, End b) { return a.e < b.e || (a.e == b.e && a.negseq < b.negseq); }

static void heap_push(End *h, size_t *n, End x) {
    size_t i = (*n)++;
    while (i > 0 && end_less(x, h[(i - 1) / 2])) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = x;
}

static End heap_pop(End *h, size_t *n) {
    End top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && end_less(h[c + 1], h[c])) c++;
        if (!end_less(h[c], x)) break;
        h[i] = h[c]; i = c;
    }
    if (*n) h[i] = x;
    return top;
}

typedef struct {
    Labels *L; Open *active; size_t nactive; End *ends; size_t nends;
    Bounds out;
    int64_t tid, pend_t; int pend_set; int32_t pend_lab; int32_t last; int last_set;
} Sweep;

/* _close: the open range that ends first closes; *t and *lab: when that takes effect, the label from then on. */
static int close_first(Sweep *w, int64_t *t, int32_t *lab) {
    End x = heap_pop(w->ends, &w->nends);
    int64_t seq = -x.negseq;
    if (w->active[w->nactive - 1].seq == seq) {
        w->nactive--;
    } else {
        size_t i = w->nactive - 1;
        while (w->active[i].seq != seq) i--;
        memmove(&w->active[i], &w->active[i + 1], (w->nactive - i - 1) * sizeof *w->active);
        w->nactive--;
        for (size_t j = i; j < w->nactive; j++)
            if (open_range(w->L, w->active[j].seq, w->active[j].op, j ? &w->active[j - 1] : NULL, &w->active[j]) < 0)
                return -1;
    }
    *t = x.e + 1;
    *lab = w->nactive ? w->active[w->nactive - 1].lab : -1;
    return 0;
}

static int emit(Sweep *w) {  /* the held-back boundary, when its label differs from the last emitted */
    if (w->pend_set && (!w->last_set || w->pend_lab != w->last)) {
        if (bounds_push(&w->out, w->tid, w->pend_t, w->pend_lab < 0 ? -1 : w->pend_lab) < 0) return -1;
        w->last = w->pend_lab; w->last_set = 1;
    }
    return 0;
}

static int at(Sweep *w, int64_t t, int32_t lab) {  /* a boundary at t: of several at one time the last holds */
    if (!w->pend_set || t != w->pend_t) {
        if (emit(w) < 0) return -1;
        w->pend_t = t; w->pend_set = 1;
    }
    w->pend_lab = lab;
    return 0;
}

static int close_all(Sweep *w) {
    while (w->nends) {
        int64_t t; int32_t lab;
        if (close_first(w, &t, &lab) < 0 || at(w, t, lab) < 0) return -1;
    }
    return emit(w);
}

static int sweep_all(Ranges *r, Labels *L, Bounds *out) {
    Sweep w = {.L = L, .active = malloc((r->n + 1) * sizeof(Open)), .ends = malloc((r->n + 1) * sizeof(End)),
               .pend_lab = -1, .last = -1};
    int started = 0, rc = -1;
    if (!w.active || !w.ends) goto done;
    for (size_t seq = 0; seq < r->n; seq++) {
        if (!started || r->tid[seq] != w.tid) {
            if (started && close_all(&w) < 0) goto done;
            started = 1;
            w.tid = r->tid[seq]; w.pend_set = 0; w.pend_lab = -1; w.last_set = 0;
        }
        while (w.nends && w.ends[0].e < r->s[seq]) {
            int64_t t; int32_t lab;
            if (close_first(&w, &t, &lab) < 0 || at(&w, t, lab) < 0) goto done;
        }
        int32_t op = L->name_op[r->name[seq]];
        if (open_range(L, (int64_t)seq, op, w.nactive ? &w.active[w.nactive - 1] : NULL, &w.active[w.nactive]) < 0)
            goto done;
        w.nactive++;
        heap_push(w.ends, &w.nends, (End){r->e[seq], -(int64_t)seq});
        if (at(&w, r->s[seq], w.active[w.nactive - 1].lab) < 0) goto done;
    }
    if (started && close_all(&w) < 0) goto done;
    rc = 0;
done:
    free(w.active); free(w.ends);
    if (rc == 0) *out = w.out; else bounds_free(&w.out);
    return rc;
}

static Thread *thread_of(Segments *g, int64_t tid) {
    size_t lo = 0, hi = g->nthreads;  /* threads are in tid order */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->threads[mid].tid < tid) lo = mid + 1; else hi = mid;
    }
    return lo < g->nthreads && g->threads[lo].tid == tid ? &g->threads[lo] : NULL;
}

/* The last segment of the thread starting at or before t (SQL: g.tid = ? AND g.s <= ? ORDER BY g.s DESC LIMIT 1):
 * its index, or -1. Launch calls come nearly in time order per thread, so the previous answer is tried first. */
static ptrdiff_t seg_at(Segments *g, Thread *th, int64_t t) {
    size_t i = th->last;
    if (i < th->hi && g->s[i] <= t && (i + 1 == th->hi || g->s[i + 1] > t)) return (ptrdiff_t)i;
    size_t lo = th->lo, hi = th->hi;  /* first index with s > t */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->s[mid] <= t) lo = mid + 1; else hi = mid;
    }
    if (lo == th->lo) return -1;
    th->last = lo - 1;
    return (ptrdiff_t)(lo - 1);
}

static int64_t *main_of(Mains *m, int64_t p) {
    for (size_t i = 0; i < m->n; i++)  /* one row per process: a handful */
        if (m->p[i] == p) return &m->tid[i];
    return NULL;
}

/* ---- outcomes: what a launch call gives its kernels — its label, whether borrowed (via), its join key — numbered.
 * A call keeps only its correlation id and its outcome: 16 bytes, where its join key kept beside it took 24 (the
 * launch calls of a slice are the pass's memory: 2.5M of them at 5M launches on 2 cores). ---- */
typedef struct { int64_t lab, jk; int via; } Outcome;
typedef struct { Outcome *o; size_t n, cap; int32_t *slot; size_t slots; int32_t last; } Outcomes;

static size_t outcome_hash(int64_t lab, int64_t jk, int via, size_t mask) {
    return mix((uint64_t)lab * 0x9E3779B97F4A7C15ULL ^ mix((uint64_t)jk) ^ (uint64_t)via) & mask;
}

static int32_t outcome_id(Outcomes *oc, int64_t lab, int64_t jk, int via) {
    if (oc->n && oc->o[oc->last].lab == lab && oc->o[oc->last].jk == jk && oc->o[oc->last].via == via) return oc->last;
    if ((oc->n + 1) * 2 > oc->slots) {  /* open addressing over the ids, kept half empty */
        size_t slots = oc->slots ? oc->slots * 2 : 256;
        int32_t *slot = malloc(slots * sizeof *slot);
        if (!slot) return -1;
        memset(slot, 0xff, slots * sizeof *slot);
        for (size_t i = 0; i < oc->n; i++) {
            size_t j = outcome_hash(oc->o[i].lab, oc->o[i].jk, oc->o[i].via, slots - 1);
            while (slot[j] >= 0) j = (j + 1) & (slots - 1);
            slot[j] = (int32_t)i;
        }
        free(oc->slot); oc->slot = slot; oc->slots = slots;
    }
    size_t j = outcome_hash(lab, jk, via, oc->slots - 1);
    for (; oc->slot[j] >= 0; j = (j + 1) & (oc->slots - 1)) {
        Outcome *o = &oc->o[oc->slot[j]];
        if (o->lab == lab && o->jk == jk && o->via == via) return oc->last = oc->slot[j];
    }
    if (grow((void **)&oc->o, &oc->cap, oc->n + 1, sizeof *oc->o)) return -1;
    oc->o[oc->n] = (Outcome){lab, jk, via};
    oc->slot[j] = (int32_t)oc->n;
    return oc->last = (int32_t)oc->n++;
}

/* The label of a launch call made at t on thread tid (NULL flags as in SQL): its own thread's segment, else (via) the
 * segment of its process's main thread, else -1 — _attribute_slice's IFNULL(own, IFNULL(main thread's, -1)). */
static int32_t label_call(Segments *g, Mains *mains, Outcomes *oc, int64_t jk, Val tid, Val t, Val proc) {
    if (!tid.null && !t.null) {
        Thread *th = thread_of(g, tid.v);
        ptrdiff_t i = th ? seg_at(g, th, t.v) : -1;
        if (i >= 0 && g->lab[i] >= 0) return outcome_id(oc, g->lab[i], jk, 0);
    }
    int64_t lab = -1;
    int64_t *m = proc.null ? NULL : main_of(mains, proc.v);
    if (m && !tid.null && *m != tid.v && !t.null) {
        Thread *th = thread_of(g, *m);
        ptrdiff_t i = th ? seg_at(g, th, t.v) : -1;
        if (i >= 0 && g->lab[i] >= 0) lab = g->lab[i];
    }
    return outcome_id(oc, lab, jk, 1);
}

/* ---- launch calls by correlation id (chained: a LEFT JOIN gives one row per matching call) ----
 * Correlation ids count up through a capture, and both tables come nearly in their order: the low bits of the id
 * pick its bucket, so that both passes walk the table in order (a mixing hash made the join three times slower,
 * from cache misses). Ids that crowd a few buckets instead (long chains: measured once all calls are in) are
 * placed again with the mixing hash. */
typedef struct { int64_t corr; int32_t outcome, next; } Call;
typedef struct { Call *c; size_t n, cap; int32_t *head; size_t mask; int mixed; } Calls;

static size_t bucket(const Calls *cs, int64_t corr) {
    uint64_t x = (uint64_t)corr;
    return (cs->mixed ? mix(x) : x ^ (x >> 32)) & cs->mask;
}

static int calls_place(Calls *cs, size_t buckets, int mixed) {
    int32_t *head = malloc(buckets * sizeof *head);
    if (!head) return -1;
    memset(head, 0xff, buckets * sizeof *head);
    free(cs->head);
    cs->head = head; cs->mask = buckets - 1; cs->mixed = mixed;
    for (size_t i = cs->n; i-- > 0;) {  /* from the last: each chain lists its calls in rowid order */
        size_t b = bucket(cs, cs->c[i].corr);
        cs->c[i].next = head[b];
        head[b] = (int32_t)i;
    }
    return 0;
}

static int calls_add(Calls *cs, int64_t corr, int32_t outcome) {
    if (cs->n >= INT32_MAX) return -1;
    if (grow((void **)&cs->c, &cs->cap, cs->n + 1, sizeof *cs->c)) return -1;
    cs->c[cs->n++] = (Call){corr, outcome, -1};
    return 0;
}

/* The buckets, once every call is in: as many as calls (a power of two); mixed when the plain ones crowd. */
static int calls_index(Calls *cs) {
    size_t buckets = 1024;
    while (buckets < cs->n) buckets *= 2;
    if (calls_place(cs, buckets, 0) < 0) return -1;
    uint64_t walk = 0;  /* the steps of finding every call: chain length squared, summed */
    for (size_t b = 0; b < buckets; b++) {
        uint64_t len = 0;
        for (int32_t i = cs->head[b]; i >= 0; i = cs->c[i].next) len++;
        walk += len * len;
    }
    return walk > 4 * (uint64_t)cs->n + 1024 ? calls_place(cs, buckets, 1) : 0;
}

/* ---- groups: (pid, dev, outcome, key) → launches, total ns ---- */
typedef struct { int64_t pid, dev, key; int32_t outcome; char key_null, used; int64_t n, tot; } Group;
typedef struct { Group *g; size_t n, mask; } Groups;

static Group *group_of(Groups *gs, int64_t pid, int64_t dev, int32_t outcome, int64_t key, char key_null) {
    uint64_t h = mix((uint64_t)pid * 0x9E3779B97F4A7C15ULL ^ mix((uint64_t)dev + 0x632BE59BD9B4E019ULL)
                     ^ mix((uint64_t)key * 31 + (uint64_t)outcome * 1000003ULL + (uint64_t)key_null));
    size_t i = h & gs->mask;
    while (gs->g[i].used) {
        Group *x = &gs->g[i];
        if (x->pid == pid && x->dev == dev && x->outcome == outcome && x->key == key && x->key_null == key_null)
            return x;
        i = (i + 1) & gs->mask;
    }
    if ((gs->n + 1) * 2 > gs->mask + 1) {  /* keep it half empty: grow and place everything again */
        size_t cap = (gs->mask + 1) * 2;
        Group *old = gs->g, *g = calloc(cap, sizeof *g);
        if (!g) return NULL;
        size_t oldcap = gs->mask + 1;
        gs->g = g; gs->mask = cap - 1; gs->n = 0;
        for (size_t j = 0; j < oldcap; j++)
            if (old[j].used) {
                Group *y = group_of(gs, old[j].pid, old[j].dev, old[j].outcome, old[j].key, old[j].key_null);
                y->n = old[j].n; y->tot = old[j].tot;
            }
        free(old);
        return group_of(gs, pid, dev, outcome, key, key_null);
    }
    gs->g[i] = (Group){pid, dev, key, outcome, key_null, 1, 0, 0};
    gs->n++;
    return &gs->g[i];
}

/* The launch calls that calls_sql yields into cs, each labelled. bounds (lo, hi): the SQL's ?1 and ?2, and the calls
 * with lo <= correlation id <= hi inside skip (when given) are left out: their kernels were matched already. */
static int calls_load(sqlite3 *db, const char *calls_sql, const int64_t *bounds, const int64_t *skip, Segments *g,
                      Mains *mains, Outcomes *oc, Calls *cs, Err *err) {
    sqlite3_stmt *st = NULL;
    int rc, out = -1;
    Val v[5];
    if (S.prepare_v2(db, calls_sql, -1, &st, NULL) != SQLITE_OK) { sql_error(err, db, "launch calls"); goto done; }
    if (S.column_count(st) != 5) { snprintf(err->msg, sizeof err->msg, "launch calls: 5 columns"); goto done; }
    if (bounds && (S.bind_int64(st, 1, bounds[0]) != SQLITE_OK || S.bind_int64(st, 2, bounds[1]) != SQLITE_OK)) {
        sql_error(err, db, "launch calls' bounds"); goto done;
    }
    while ((rc = S.step(st)) == SQLITE_ROW) {
        if (read_row(st, v, 5, err) < 0) goto done;
        if (v[0].null || v[1].null) continue;  /* a NULL correlation id or join key never matches (NULL = x) */
        if (skip && v[0].v >= skip[0] && v[0].v <= skip[1]) continue;
        int32_t o = label_call(g, mains, oc, v[1].v, v[2], v[3], v[4]);
        if (o < 0 || calls_add(cs, v[0].v, o) < 0) { snprintf(err->msg, sizeof err->msg, "out of memory"); goto done; }
    }
    if (rc != SQLITE_DONE) { sql_error(err, db, "launch calls"); goto done; }
    if (calls_index(cs) < 0) { snprintf(err->msg, sizeof err->msg, "out of memory"); goto done; }
    out = 0;
done:
    if (st) S.finalize(st);
    return out;
}

/* ---- the busy-time union of one group's intervals (timeline/busy.busy_part, whose Python loop this is) ----
 * sql yields (start, end, kernel flag) in start order; the result is busy_part's 7 values, or 0 rows. */
typedef struct { int64_t busy, first, reach, kfirst, below, klast, upto; int has_kfirst, has_klast, rows; } Busy;

/* One interval (start order) into the union: busy_part's merge, line for line (b zeroed before the first). */
static inline void busy_add(Busy *b, int64_t start, int64_t end, int k) {
    if (!b->rows++) {
        b->first = start; b->reach = end; b->busy = end - start;
        if (k) { b->kfirst = start; b->has_kfirst = 1; b->below = 0; b->klast = end; b->has_klast = 1; b->upto = b->busy; }
        return;
    }
    if (k && !b->has_kfirst) {
        b->kfirst = start; b->has_kfirst = 1;
        b->below = b->busy - (b->reach - start > 0 ? b->reach - start : 0);
    }
    if (start >= b->reach) { b->busy += end - start; b->reach = end; }
    else if (end > b->reach) { b->busy += end - b->reach; b->reach = end; }
    if (k && (!b->has_klast || end > b->klast)) { b->klast = end; b->has_klast = 1; b->upto = b->busy - (b->reach - end); }
}

static int busy_merge(const char *uri, const char *sql, const int64_t *params, const char *nulls, int nparams,
                      Busy *b, Guard *gd, Err *err) {
    sqlite3 *db = NULL; sqlite3_stmt *st = NULL;
    int rc, out = -1;
    Val v[3];
    memset(b, 0, sizeof *b);
    if (S.open_v2(uri, &db, OPEN_FLAGS, NULL) != SQLITE_OK) {
        sql_error(err, db, "capture"); goto done;
    }
    guard_on(db, gd);
    if (S.prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) { sql_error(err, db, "busy time"); goto done; }
    for (int i = 0; i < nparams; i++)
        if ((nulls[i] ? S.bind_null(st, i + 1) : S.bind_int64(st, i + 1, params[i])) != SQLITE_OK) {
            sql_error(err, db, "busy time"); goto done;
        }
    while ((rc = S.step(st)) == SQLITE_ROW) {
        if (read_row(st, v, 3, err) < 0) goto done;
        if (v[0].null || v[1].null || v[2].null) { err->unsupported = 1; goto done; }
        int64_t start = v[0].v, end = v[1].v;
        const int64_t far = (int64_t)1 << 62;  /* beyond: differences could overflow, where Python's cannot */
        if (start < -far || start > far || end < -far || end > far) { err->unsupported = 1; goto done; }
        busy_add(b, start, end, v[2].v != 0);
    }
    if (rc != SQLITE_DONE) { sql_error(err, db, "busy time"); goto done; }
    out = 0;
done:
    if (st) S.finalize(st);
    if (db) S.close(db);
    return out;
}

/* ---- the busy-time union of every group at once (timeline/busy.busy_time): one scan of each table, the
 * intervals sorted here instead of by SQLite per group ----
 * Held in a bounded window: Nsight Systems exports list intervals nearly in start order by rowid, so each lane
 * (group, dev) holds at most `hold` of them; when full they are sorted and the earlier half merged (busy_add), its
 * last start becoming the lane's watermark. A row that starts before its lane's watermark would have had to be
 * merged earlier: the pass then starts again holding every interval (hold 0: the full sort), which is exact
 * whatever the order. The tables are read side by side, always the one whose last start is earliest, so that a
 * copy table does not come after every kernel. Why: at 20M launches the held intervals (16 bytes each) made the
 * busy-time child the largest process of a report (358 MB). */
typedef struct { int64_t s, e2k; } Span;  /* e2k: end * 2 + kernel flag (|end| <= 2^62) */
typedef struct { int64_t g, d; char gnull, dnull; Span *v; size_t n, cap; Busy b; int64_t mark; int marked; } Lane;

static void span_sift(Span *a, size_t n, size_t i) {
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && a[c + 1].s > a[c].s) c++;
        if (a[c].s <= a[i].s) return;
        Span t = a[i]; a[i] = a[c]; a[c] = t;
        i = c;
    }
}

static void span_heapsort(Span *a, size_t n) {
    for (size_t i = n / 2; i-- > 0;) span_sift(a, n, i);
    for (size_t k = n; k-- > 1;) { Span t = a[0]; a[0] = a[k]; a[k] = t; span_sift(a, k, 0); }
}

/* Introsort by start: quicksort (median of three; rows come nearly in start order, where that is quick), heapsort
 * where it recurses too deep, insertion sort for short runs. Equal starts may come in any order: the union, the
 * first kernel's start and the last kernel's end do not depend on it (busy_part says why). */
static void span_sort(Span *a, size_t n, int depth) {
    while (n > 16) {
        if (depth-- == 0) { span_heapsort(a, n); return; }
        size_t m = n / 2;
        if (a[m].s < a[0].s) { Span t = a[m]; a[m] = a[0]; a[0] = t; }
        if (a[n - 1].s < a[0].s) { Span t = a[n - 1]; a[n - 1] = a[0]; a[0] = t; }
        if (a[n - 1].s < a[m].s) { Span t = a[n - 1]; a[n - 1] = a[m]; a[m] = t; }
        int64_t pivot = a[m].s;
        size_t i = 0, j = n - 1;
        for (;;) {
            while (a[i].s < pivot) i++;
            while (a[j].s > pivot) j--;
            if (i >= j) break;
            Span t = a[i]; a[i] = a[j]; a[j] = t;
            i++; j--;
        }
        size_t left = j + 1;  /* [0, left) <= pivot <= [left, n) */
        if (left == 0 || left >= n) { span_heapsort(a, n); return; }  /* cannot happen; never loops if it does */
        if (left < n - left) { span_sort(a, left, depth); a += left; n -= left; }
        else { span_sort(a + left, n - left, depth); n = left; }
    }
    for (size_t i = 1; i < n; i++) {
        Span x = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1].s > x.s) { a[j] = a[j - 1]; j--; }
        a[j] = x;
    }
}

/* Sorts the lane's held intervals and merges the first `emit` of them into its union; the rest stay held, their
 * starts no earlier than the lane's new watermark. */
static void lane_merge(Lane *l, size_t emit) {
    int depth = 2;
    for (size_t n = l->n; n > 1; n >>= 1) depth += 2;
    size_t i = 1;
    while (i < l->n && l->v[i - 1].s <= l->v[i].s) i++;  /* rows in start order (Nsight Systems' mostly are): no sort */
    if (i < l->n) span_sort(l->v, l->n, depth);
    for (size_t i = 0; i < emit; i++) {
        int64_t start = l->v[i].s, end = l->v[i].e2k >> 1;  /* arithmetic shift: floor division by 2 */
        busy_add(&l->b, start, end, (int)(l->v[i].e2k & 1));
    }
    if (emit) { l->mark = l->v[emit - 1].s; l->marked = 1; }
    memmove(l->v, l->v + emit, (l->n - emit) * sizeof *l->v);
    l->n -= emit;
}

static void busy_of_lane(Lane *l, Busy *b) {
    lane_merge(l, l->n);
    *b = l->b;
}

/* The lanes, found by (group, dev) in an open-addressing table (slot: lane index, -1 empty; at most half full): a
 * capture may name any number of devices, and a linear search per row made the pass devices x rows (20,000 device
 * ids: 5.7 s, against 3.5 s by the SQL path). */
typedef struct { Lane *l; size_t n, cap; int64_t *slot; size_t nslots; int far; } Lanes;  /* far: lanes_add's */

static size_t lane_hash(int64_t g, char gnull, int64_t d, char dnull) {
    uint64_t a = (uint64_t)g * 2 + (uint64_t)gnull, b = (uint64_t)d * 2 + (uint64_t)dnull;  /* a NULL's value: 0 */
    return (size_t)mix(mix(a) ^ b);
}

static int lanes_rehash(Lanes *ls) {
    size_t slots = ls->nslots ? ls->nslots * 2 : 64, mask = slots - 1;
    int64_t *slot = malloc(slots * sizeof *slot);
    if (!slot) return -1;
    memset(slot, 0xff, slots * sizeof *slot);
    for (size_t j = 0; j < ls->n; j++) {
        Lane *l = &ls->l[j];
        size_t i = lane_hash(l->g, l->gnull, l->d, l->dnull) & mask;
        while (slot[i] >= 0) i = (i + 1) & mask;
        slot[i] = (int64_t)j;
    }
    free(ls->slot);
    ls->slot = slot; ls->nslots = slots;
    return 0;
}

static Lane *lane_of(Lanes *ls, Val g, Val d) {
    if ((ls->n + 1) * 2 > ls->nslots && lanes_rehash(ls)) return NULL;
    char gnull = (char)g.null, dnull = (char)d.null;
    int64_t gv = gnull ? 0 : g.v, dv = dnull ? 0 : d.v;
    size_t mask = ls->nslots - 1, i = lane_hash(gv, gnull, dv, dnull) & mask;
    for (; ls->slot[i] >= 0; i = (i + 1) & mask) {
        Lane *l = &ls->l[ls->slot[i]];
        if (l->gnull == gnull && l->dnull == dnull && l->g == gv && l->d == dv) return l;
    }
    if (grow((void **)&ls->l, &ls->cap, ls->n + 1, sizeof *ls->l)) return NULL;
    ls->slot[i] = (int64_t)ls->n;
    Lane *l = &ls->l[ls->n++];
    memset(l, 0, sizeof *l);  /* its Busy zeroed too, as busy_add expects before the first interval */
    l->g = gv; l->d = dv; l->gnull = gnull; l->dnull = dnull;
    return l;
}

static void lanes_free(Lanes *ls) {
    for (size_t i = 0; i < ls->n; i++) free(ls->l[i].v);
    free(ls->l); free(ls->slot);
    memset(ls, 0, sizeof *ls);
}

/* The islands of a lane's intervals (sorted by start: lane_merge(l, 0)) of one kernel flag, or of both (-1): the
 * (start, end) pairs of their union's pieces into out (room for 2 * l->n values; out may be the lane's own intervals
 * when flag is -1), in start order; returns how many. A start equal to the reach so far joins the piece (the union's
 * length is the same either way). Merged by busy_add in start order, islands give the 7 values their intervals give:
 * busy_add's results are those of the union, the first kernel's start and the last kernel's end, which the islands
 * of the kernels alone keep. */
static size_t lane_islands(const Lane *l, int flag, int64_t *out) {
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (flag >= 0 && (int)(l->v[i].e2k & 1) != flag) continue;
        int64_t start = l->v[i].s, end = l->v[i].e2k >> 1;
        if (k && start <= out[2 * k - 1]) {
            if (end > out[2 * k - 1]) out[2 * k - 1] = end;
        } else {
            out[2 * k] = start; out[2 * k + 1] = end; k++;
        }
    }
    return k;
}

/* One interval into its lane, held (the attribution's kernels, busy time fused: timeline/busy.py); *last caches the
 * lane of the row before. Times past +-2^62 set ls->far and are not held (busy_next declines them too). */
static int lanes_add(Lanes *ls, Lane **last, Val g, Val d, int64_t start, int64_t end, int k) {
    const int64_t far = (int64_t)1 << 62;
    if (start < -far || start > far || end < -far || end > far) { ls->far = 1; return 0; }
    Lane *l = *last;
    if (!l || l->gnull != g.null || l->dnull != d.null || (!g.null && l->g != g.v) || (!d.null && l->d != d.v)) {
        if (!(l = lane_of(ls, g, d))) return -1;
        *last = l;
    }
    if (grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) return -1;
    l->v[l->n++] = (Span){start, end * 2 + (k != 0)};
    return 0;
}

/* The next (group, dev, start, end, kernel flag) row of st into v; *live 0 past its last row. */
static int busy_next(sqlite3 *db, sqlite3_stmt *st, Val *v, char *live, Err *err) {
    const int64_t far = (int64_t)1 << 62;
    int rc = S.step(st);
    *live = rc == SQLITE_ROW;
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW) { sql_error(err, db, "busy time"); return -1; }
    if (read_row(st, v, 5, err) < 0) return -1;
    if (v[2].null || v[3].null || v[4].null || v[2].v < -far || v[2].v > far || v[3].v < -far || v[3].v > far) {
        err->unsupported = 1; return -1;
    }
    return 0;
}

/* sqls: per table, (group, dev, start, end, kernel flag) of its usable intervals, cut to the window. Returns 0, -1
 * on an error, 1 where a row came before its lane's watermark (the caller starts again with hold 0). */
static int busy_lanes_held(const char *uri, const char **sqls, int nsql, Lanes *ls, size_t hold, Guard *gd, Err *err) {
    sqlite3 *db = NULL;
    sqlite3_stmt **st = calloc(nsql + 1, sizeof *st);
    Val *cur = calloc(5 * (size_t)nsql + 1, sizeof *cur);  /* each table's row not yet merged */
    char *live = calloc(nsql + 1, 1);
    int out = -1;
    if (!st || !cur || !live) goto oom;
    if (S.open_v2(uri, &db, OPEN_FLAGS, NULL) != SQLITE_OK) {
        sql_error(err, db, "capture"); goto done;
    }
    guard_on(db, gd);
    for (int q = 0; q < nsql; q++)
        if (S.prepare_v2(db, sqls[q], -1, &st[q], NULL) != SQLITE_OK) { sql_error(err, db, "busy time"); goto done; }
    for (int q = 0; q < nsql; q++)
        if (busy_next(db, st[q], &cur[5 * q], &live[q], err) < 0) goto done;
    Lane *l = NULL;
    for (;;) {
        /* the live table whose row starts earliest (a few tables: a linear look) */
        int at = -1;
        for (int i = 0; i < nsql; i++)
            if (live[i] && (at < 0 || cur[5 * i + 2].v < cur[5 * at + 2].v)) at = i;
        if (at < 0) break;
        Val *v = &cur[5 * at];
        if (!l || l->gnull != v[0].null || l->dnull != v[1].null || (!v[0].null && l->g != v[0].v)
            || (!v[1].null && l->d != v[1].v)) {
            if (!(l = lane_of(ls, v[0], v[1]))) goto oom;
        }
        if (l->marked && v[2].v < l->mark) { out = 1; goto done; }  /* out of order past the window */
        if (grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) goto oom;
        l->v[l->n++] = (Span){v[2].v, v[3].v * 2 + (v[4].v != 0)};
        if (hold && l->n >= hold) lane_merge(l, l->n - l->n / 2);
        if (busy_next(db, st[at], v, &live[at], err) < 0) goto done;
    }
    out = 0;
    goto done;
oom:
    snprintf(err->msg, sizeof err->msg, "out of memory");
done:
    for (int q = 0; st && q < nsql; q++) if (st[q]) S.finalize(st[q]);
    if (db) S.close(db);
    free(st); free(cur); free(live);
    return out;
}

/* busy_lanes_held, started again holding every interval where the window was not enough (*restarted says so). */
static int busy_lanes(const char *uri, const char **sqls, int nsql, Lanes *ls, size_t hold, int *restarted, Guard *gd,
                      Err *err) {
    int rc = busy_lanes_held(uri, sqls, nsql, ls, hold, gd, err);
    *restarted = rc == 1;
    if (rc == 1) {
        lanes_free(ls);
        rc = busy_lanes_held(uri, sqls, nsql, ls, 0, gd, err);
    }
    return rc;
}

/* One kernel into its groups: once per matching launch call, else once as unmatched. */
typedef struct { int64_t corr, jk, pid, dev, key, dur; char corr_null, jk_null, key_null; } Kernel;

/* An int64 column grown row by row (the kernels' columns the attribution keeps for the per-step series, and
 * columns_read's). */
typedef struct { int64_t *v; size_t n, cap; } Col;

/* The kernels' (pid, start, end, key) kept while the attribution reads them, for the per-step series
 * (timeline/series_np.py: no read of its own). kernels_sql then yields start and end in place of the duration
 * (columns 5 and 6), and the duration is worked out here as readers/_durations.SOUND does in SQL: the end less the
 * start where the start is after the clock's zero, the end not before the start and the difference at most max_dur,
 * else NULL (a NULL time too).
 * A time that is neither an integer nor NULL: declined (unsupported), as a duration that is not an integer is;
 * the caller asks again without keeping. ok turns 0 (nothing more kept) at a NULL process, key or time: the series
 * then reads the table itself. */
typedef struct { Col c[4]; int ok; int64_t max_dur; } Kept;

static void kept_free(Kept *kp) { for (int i = 0; i < 4; i++) { free(kp->c[i].v); kp->c[i] = (Col){0}; } }

/* v[5] (the duration) from the row's start and end; the row kept. -1: declined (err->unsupported) or no memory. */
static int kept_row(Kept *kp, sqlite3_stmt *st, Val *v, Err *err) {
    Val s, e;
    if (read_row_at(st, 5, &s, err) < 0 || read_row_at(st, 6, &e, err) < 0) return -1;
    v[5].null = s.null || e.null || s.v <= 0 || e.v < s.v || (uint64_t)e.v - (uint64_t)s.v > (uint64_t)kp->max_dur;
    v[5].v = v[5].null ? 0 : e.v - s.v;
    if (!kp->ok) return 0;
    if (v[2].null || v[4].null || s.null || e.null) { kp->ok = 0; kept_free(kp); return 0; }
    int64_t row[4] = {v[2].v, s.v, e.v, v[4].v};
    for (int i = 0; i < 4; i++) {
        Col *c = &kp->c[i];
        if (c->n == c->cap && grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v) < 0) {
            snprintf(err->msg, sizeof err->msg, "out of memory"); return -1;
        }
        c->v[c->n++] = row[i];
    }
    return 0;
}

static int kernel_add(const Calls *cs, Outcomes *oc, Groups *gs, int32_t unmatched, const Kernel *k) {
    int matched = 0;
    if (!k->corr_null && !k->jk_null) {
        for (int32_t i = cs->head[bucket(cs, k->corr)]; i >= 0; i = cs->c[i].next) {
            if (cs->c[i].corr != k->corr || oc->o[cs->c[i].outcome].jk != k->jk) continue;
            Group *x = group_of(gs, k->pid, k->dev, cs->c[i].outcome, k->key, k->key_null);
            if (!x) return -1;
            x->n++; x->tot += k->dur; matched = 1;
        }
    }
    if (!matched) {
        Group *x = group_of(gs, k->pid, k->dev, unmatched, k->key, k->key_null);
        if (!x) return -1;
        x->n++; x->tot += k->dur;
    }
    return 0;
}

static void calls_free(Calls *cs) { free(cs->c); free(cs->head); *cs = (Calls){0}; }

/* The whole pass. calls_sql: (correlation id, join key, tid, t, process) per launch call; kernels_sql: (correlation
 * id, join key, pid, dev, key, dur) per kernel. A kernel matches the calls of equal correlation id and join key.
 * bounds (lo, hi), or NULL: an estimate of the slice's kernels' correlation ids, bound to calls_sql's ?1 and ?2
 * (the caller reads the slice's first and last rows, not the whole slice: that scan cost as long as the launch
 * calls' pass). The kernels outside it are held and matched after one more read of the calls in their range; more
 * of them than max_late (memory: 56 bytes each): the calls are read again with the exact bounds, found while reading
 * the kernels, and the kernels too. Either way every kernel meets every launch call of its correlation id, as
 * without bounds. */
static int attribute_all(const char *uri, const char *calls_sql, const char *kernels_sql, const int64_t *bounds,
                         size_t max_late,
                         Segments *g, Mains *mains, Outcomes *oc, Groups *gs, int64_t *no_duration, Kept *kept,
                         Lanes *lanes, Guard *gd, Err *err) {
    sqlite3 *db = NULL; sqlite3_stmt *st = NULL;
    Calls cs = {0};
    Kernel *late = NULL;
    size_t nlate = 0, latecap = 0;
    int64_t kmin = INT64_MAX, kmax = INT64_MIN, lmin = INT64_MAX, lmax = INT64_MIN;
    int rc, out = -1, redo = 0;
    if (S.open_v2(uri, &db, OPEN_FLAGS, NULL) != SQLITE_OK) {
        sql_error(err, db, "capture"); goto done;
    }
    guard_on(db, gd);
    if (calls_load(db, calls_sql, bounds, NULL, g, mains, oc, &cs, err) < 0) goto done;
    /* no launch call: outside any range (own IS NULL, no thread); its join key is never compared */
    int32_t unmatched = outcome_id(oc, -1, INT64_MIN, 1);
    if (unmatched < 0) { snprintf(err->msg, sizeof err->msg, "out of memory"); goto done; }
    for (int pass = 0; pass < 2; pass++) {
        if (S.prepare_v2(db, kernels_sql, -1, &st, NULL) != SQLITE_OK) { sql_error(err, db, "kernels"); goto done; }
        int ncols = lanes ? 8 : kept ? 7 : 6;
        if (S.column_count(st) != ncols) {
            snprintf(err->msg, sizeof err->msg, "kernels: %d columns", ncols); goto done;
        }
        Val v[6];
        Lane *lane = NULL;
        while ((rc = S.step(st)) == SQLITE_ROW) {
            if (read_row(st, v, kept ? 5 : 6, err) < 0) goto done;
            if (kept && kept_row(kept, st, v, err) < 0) goto done;
            if (lanes && !v[5].null && !lanes->far) {  /* a usable duration: the busy time's interval */
                Val s, e, grp;
                if (read_row_at(st, 5, &s, err) < 0 || read_row_at(st, 6, &e, err) < 0
                    || read_row_at(st, 7, &grp, err) < 0) goto done;
                if (lanes_add(lanes, &lane, grp, v[3], s.v, e.v, 1) < 0) {
                    snprintf(err->msg, sizeof err->msg, "out of memory"); goto done;
                }
            }
            Kernel k = {v[0].v, v[1].v, v[2].null ? -1 : v[2].v, v[3].null ? -1 : v[3].v, v[4].v,
                        v[5].null ? 0 : v[5].v, (char)v[0].null, (char)v[1].null, (char)v[4].null};
            *no_duration += v[5].null;
            if (bounds && pass == 0 && !k.corr_null && !k.jk_null) {
                if (k.corr < kmin) kmin = k.corr;
                if (k.corr > kmax) kmax = k.corr;
                if (k.corr < bounds[0] || k.corr > bounds[1]) {  /* its calls were not read */
                    if (redo) continue;
                    if (nlate >= max_late) { redo = 1; continue; }
                    if (grow((void **)&late, &latecap, nlate + 1, sizeof *late)) {
                        snprintf(err->msg, sizeof err->msg, "out of memory"); goto done;
                    }
                    late[nlate++] = k;
                    if (k.corr < lmin) lmin = k.corr;
                    if (k.corr > lmax) lmax = k.corr;
                    continue;
                }
            }
            if (redo) continue;  /* only the exact bounds wanted now: everything is read again */
            if (kernel_add(&cs, oc, gs, unmatched, &k) < 0) {
                snprintf(err->msg, sizeof err->msg, "out of memory"); goto done;
            }
        }
        if (rc != SQLITE_DONE) { sql_error(err, db, "kernels"); goto done; }
        S.finalize(st); st = NULL;
        if (!redo) break;
        /* too many outside the estimate: the calls of the exact bounds, and every kernel again */
        calls_free(&cs);
        memset(gs->g, 0, (gs->mask + 1) * sizeof *gs->g);
        gs->n = 0; *no_duration = 0; nlate = 0; redo = 0;
        if (kept) for (int i = 0; i < 4; i++) kept->c[i].n = 0;  /* every kernel is read again: kept again */
        if (lanes) lanes_free(lanes);
        int64_t exact[2] = {kmin, kmax};
        if (calls_load(db, calls_sql, exact, NULL, g, mains, oc, &cs, err) < 0) goto done;
        bounds = NULL;
    }
    if (nlate) {  /* the calls of the held kernels' range, but those already read (their kernels are matched) */
        int64_t range[2] = {lmin, lmax};
        calls_free(&cs);
        if (calls_load(db, calls_sql, range, bounds, g, mains, oc, &cs, err) < 0) goto done;
        for (size_t i = 0; i < nlate; i++)
            if (kernel_add(&cs, oc, gs, unmatched, &late[i]) < 0) {
                snprintf(err->msg, sizeof err->msg, "out of memory"); goto done;
            }
    }
    out = 0;
done:
    if (st) S.finalize(st);
    if (db) S.close(db);
    calls_free(&cs);
    free(late);
    return out;
}

/* ---- the Python face ---- */
static int bind_now(void);
static PyObject *value_or_none(int64_t v, char null);
static PyObject *lanes_list(Lanes *ls, int flag);
static const char CAPSULE[] = "nvprof_wrap.timeline._cattr.segments";

static void capsule_free(PyObject *c) { segments_free(PyCapsule_GetPointer(c, CAPSULE)); }

static PyObject *wrap(Segments *g) {
    PyObject *c = PyCapsule_New(g, CAPSULE, capsule_free);
    if (!c) segments_free(g);
    return c;
}

/* An int64 from an int, or *bad when it is anything else (None is NULL where null is given). */
static int64_t int_of(PyObject *o, char *null, int *bad) {
    if (null) *null = o == Py_None;
    if (o == Py_None && null) return 0;
    if (!PyLong_CheckExact(o)) { *bad = 1; return 0; }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); *bad = 1; }
    return v;
}

static PyObject *py_attribute(PyObject *self, PyObject *args) {
    if (bind_now() < 0) return NULL;
    const char *uri, *calls_sql, *kernels_sql;
    PyObject *capsule, *main_pairs, *bounds_arg = Py_None;
    Guard gd = {NULL, 0, NULL, NULL, NULL};
    int64_t bounds[2];
    Py_ssize_t max_late = 0;
    long long keep = -1;  /* >= 0: keep the kernels' columns, durations at most this long */
    int with_lanes = 0, keep_cols = 1;  /* lanes: the kernels' busy-time islands too; cols 0: those alone, no columns */
    if (!PyArg_ParseTuple(args, "sssOO|OiOnLpp", &uri, &calls_sql, &kernels_sql, &capsule, &main_pairs, &gd.budget,
                          &gd.grain, &bounds_arg, &max_late, &keep, &with_lanes, &keep_cols)) return NULL;
    if (with_lanes && keep < 0) {
        PyErr_SetString(PyExc_ValueError, "attribute: lanes need keep (the longest duration kept)");
        return NULL;
    }
    if (bounds_arg != Py_None && !PyArg_ParseTuple(bounds_arg, "LL", &bounds[0], &bounds[1])) return NULL;
    Segments *g = PyCapsule_GetPointer(capsule, CAPSULE);
    if (!g) return NULL;
    PyObject *pairs = PySequence_Fast(main_pairs, "main threads: a sequence of (process, tid)");
    if (!pairs) return NULL;
    Py_ssize_t np = PySequence_Fast_GET_SIZE(pairs);
    Mains mains = {malloc((np + 1) * sizeof(int64_t)), malloc((np + 1) * sizeof(int64_t)), 0};
    int bad = 0;
    for (Py_ssize_t i = 0; mains.p && mains.tid && i < np; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) { bad = 1; break; }
        char pn, tn;
        int64_t p = int_of(PyTuple_GET_ITEM(pair, 0), &pn, &bad), tid = int_of(PyTuple_GET_ITEM(pair, 1), &tn, &bad);
        if (!pn && !tn) { mains.p[mains.n] = p; mains.tid[mains.n++] = tid; }  /* a NULL never matches */
    }
    Py_DECREF(pairs);
    Outcomes oc = {0};
    Groups gs = {calloc(1024, sizeof(Group)), 0, 1023};
    Kept kept = {{{0}}, keep_cols, (int64_t)keep};
    Lanes lanes = {0};
    Err err = {{0}, 0};
    int rc = -1;
    PyObject *result = NULL;
    if (bad) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (!gs.g || !mains.p || !mains.tid) { PyErr_NoMemory(); goto done; }
    int64_t no_duration = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = attribute_all(uri, calls_sql, kernels_sql, bounds_arg == Py_None ? NULL : bounds,
                       max_late > 0 ? (size_t)max_late : 0, g, &mains, &oc, &gs,
                       &no_duration, keep >= 0 ? &kept : NULL, with_lanes ? &lanes : NULL, &gd, &err);
    for (size_t i = 0; rc == 0 && !lanes.far && i < lanes.n; i++) {  /* each lane's intervals become its islands */
        Lane *l = &lanes.l[i];
        lane_merge(l, 0);
        l->n = lane_islands(l, -1, (int64_t *)l->v);  /* in place: an island is written where a row was read */
    }
    Py_END_ALLOW_THREADS
    if (guard_raised(&gd)) goto done;
    if (rc == 0) {
        result = PyList_New(0);
        for (size_t i = 0; result && i <= gs.mask; i++) {
            Group *x = &gs.g[i];
            if (!x->used) continue;
            Outcome o = oc.o[x->outcome];
            PyObject *row = x->key_null ? Py_BuildValue("(LLLsiLL)", x->pid, x->dev, o.lab, "", o.via, x->n, x->tot)
                                        : Py_BuildValue("(LLLLiLL)", x->pid, x->dev, o.lab, x->key, o.via, x->n, x->tot);
            if (!row || PyList_Append(result, row) < 0) { Py_XDECREF(row); Py_CLEAR(result); break; }
            Py_DECREF(row);
        }
        if (result && keep < 0) result = Py_BuildValue("(NL)", result, no_duration);
        else if (result) {  /* the kept columns as bytes of int64, or None where they were given up */
            PyObject *cols = kept.ok ? PyList_New(4) : Py_NewRef(Py_None);
            for (int i = 0; cols && kept.ok && i < 4; i++) {
                PyObject *b = PyBytes_FromStringAndSize(kept.c[i].v ? (const char *)kept.c[i].v : "",
                                                        (Py_ssize_t)(kept.c[i].n * sizeof(int64_t)));
                free(kept.c[i].v); kept.c[i].v = NULL;
                if (!b) Py_CLEAR(cols);
                else PyList_SET_ITEM(cols, i, b);
            }
            /* the lanes' islands, or None where a time past +-2^62 gave them up */
            PyObject *isl = !with_lanes ? NULL : lanes.far ? Py_NewRef(Py_None) : lanes_list(&lanes, -1);
            if (!cols || (with_lanes && !isl)) { Py_XDECREF(cols); Py_XDECREF(isl); Py_CLEAR(result); }
            else if (!with_lanes) result = Py_BuildValue("(NLN)", result, no_duration, cols);
            else result = Py_BuildValue("(NLNN)", result, no_duration, cols, isl);
        }
    } else if (err.unsupported) {
        result = Py_NewRef(Py_None);
    } else {
        PyErr_SetString(PyExc_RuntimeError, err.msg);
    }
done:
    free(mains.p); free(mains.tid); free(oc.o); free(oc.slot); free(gs.g);
    kept_free(&kept);
    lanes_free(&lanes);
    return result;
}

static PyObject *py_busy(PyObject *self, PyObject *args) {
    if (bind_now() < 0) return NULL;
    const char *uri, *sql;
    PyObject *params;
    Guard gd = {NULL, 0, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "ssO|Oi", &uri, &sql, &params, &gd.budget, &gd.grain)) return NULL;
    PyObject *seq = PySequence_Fast(params, "busy: parameters");
    if (!seq) return NULL;
    int n = (int)PySequence_Fast_GET_SIZE(seq), bad = 0;
    int64_t *vals = malloc((n + 1) * sizeof *vals);
    char *nulls = malloc(n + 1);
    for (int i = 0; vals && nulls && i < n; i++) vals[i] = int_of(PySequence_Fast_GET_ITEM(seq, i), &nulls[i], &bad);
    Py_DECREF(seq);
    if (!vals || !nulls) { free(vals); free(nulls); return PyErr_NoMemory(); }
    if (bad) { free(vals); free(nulls); Py_RETURN_NONE; }
    Busy b;
    Err err = {{0}, 0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = busy_merge(uri, sql, vals, nulls, n, &b, &gd, &err);
    Py_END_ALLOW_THREADS
    free(vals); free(nulls);
    if (guard_raised(&gd)) return NULL;
    if (rc < 0) {
        if (err.unsupported) Py_RETURN_NONE;
        PyErr_SetString(PyExc_RuntimeError, err.msg);
        return NULL;
    }
    if (!b.rows) return Py_BuildValue("(O)", Py_None);  /* no interval: busy_part's None */
    PyObject *kfirst = b.has_kfirst ? PyLong_FromLongLong(b.kfirst) : Py_NewRef(Py_None);
    PyObject *klast = b.has_klast ? PyLong_FromLongLong(b.klast) : Py_NewRef(Py_None);
    if (!kfirst || !klast) { Py_XDECREF(kfirst); Py_XDECREF(klast); return NULL; }
    PyObject *part = Py_BuildValue("(LLLNLNL)", b.busy, b.first, b.reach, kfirst, b.below, klast, b.busy - b.upto);
    return part ? Py_BuildValue("(N)", part) : NULL;
}

static PyObject *value_or_none(int64_t v, char null) { return null ? Py_NewRef(Py_None) : PyLong_FromLongLong(v); }

/* [(group, dev, busy_part's 7 values)] of each lane, its values in parts (the same index). */
static PyObject *lane_rows(const Lanes *ls, const Busy *parts) {
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < ls->n; i++) {
        const Lane *l = &ls->l[i];
        const Busy *b = &parts[i];
        PyObject *row = Py_BuildValue("(NN(LLLNLNL))", value_or_none(l->g, l->gnull), value_or_none(l->d, l->dnull),
                                      b->busy, b->first, b->reach, value_or_none(b->kfirst, !b->has_kfirst),
                                      b->below, value_or_none(b->klast, !b->has_klast), b->busy - b->upto);
        if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
        Py_XDECREF(row);
    }
    return out;
}

/* The UTF-8 text of each SQL in a Python sequence, valid while *seq (set here) is held: the caller frees the array
 * and releases *seq. NULL with the error set. */
static const char **sql_strings(PyObject *list, const char *what, PyObject **seq, int *n) {
    *seq = PySequence_Fast(list, what);
    if (!*seq) return NULL;
    *n = (int)PySequence_Fast_GET_SIZE(*seq);
    const char **sqls = calloc((size_t)*n + 1, sizeof *sqls);
    if (!sqls) { Py_CLEAR(*seq); PyErr_NoMemory(); return NULL; }
    for (int i = 0; i < *n; i++)
        if (!(sqls[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(*seq, i)))) { free(sqls); Py_CLEAR(*seq); return NULL; }
    return sqls;
}

static PyObject *py_busy_all(PyObject *self, PyObject *args) {
    if (bind_now() < 0) return NULL;
    const char *uri;
    PyObject *list;
    Guard gd = {NULL, 0, NULL, NULL, NULL};
    Py_ssize_t hold = 0;
    int islands = 0;  /* the intervals as islands, not merged (busy_islands: timeline/busy.py's fused busy time) */
    if (!PyArg_ParseTuple(args, "sO|Oinp", &uri, &list, &gd.budget, &gd.grain, &hold, &islands)) return NULL;
    if (hold < 0) { PyErr_SetString(PyExc_ValueError, "busy_all: hold must be 0 or more"); return NULL; }
    if (islands) hold = 0;  /* every interval held: islands are made of all of them at once */
    PyObject *seq;
    int nsql;
    const char **sqls = sql_strings(list, "busy_all: a sequence of SQL", &seq, &nsql);
    if (!sqls) return NULL;
    Lanes ls = {0};
    Err err = {{0}, 0};
    int rc, restarted = 0;
    Busy *parts = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = busy_lanes(uri, sqls, nsql, &ls, (size_t)hold, &restarted, &gd, &err);
    if (rc == 0 && !islands && !(parts = calloc(ls.n + 1, sizeof *parts))) {
        rc = -1; snprintf(err.msg, sizeof err.msg, "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < ls.n; i++) {
        if (islands) { lane_merge(&ls.l[i], 0); continue; }  /* sorted by start, nothing merged */
        busy_of_lane(&ls.l[i], &parts[i]); free(ls.l[i].v); ls.l[i].v = NULL;
    }
    Py_END_ALLOW_THREADS
    free(sqls);
    Py_DECREF(seq);
    PyObject *result = NULL;
    if (guard_raised(&gd)) {
        /* the signal's exception is the call's */
    } else if (rc == 0 && islands) {
        result = lanes_list(&ls, 0);
    } else if (rc == 0) {
        result = lane_rows(&ls, parts);
        if (result) result = Py_BuildValue("(NO)", result, restarted ? Py_True : Py_False);
    } else if (err.unsupported) {
        result = Py_NewRef(Py_None);
    } else {
        PyErr_SetString(PyExc_RuntimeError, err.msg);
    }
    lanes_free(&ls);
    free(parts);
    return result;
}

/* [(group, dev, bytes of int64 (start, end) pairs)] of each lane with intervals, whose islands lane_islands wrote
 * over its own intervals (flag -1: l->n of them), or [(group, dev, flag, bytes)] of each lane's islands of kernels
 * (1) and of the rest (0) apart (flag 0 or 1: busy_islands, from the lane's intervals sorted, left as they are). */
static PyObject *lanes_list(Lanes *ls, int flag) {
    PyObject *out = PyList_New(0);
    int64_t *buf = NULL;
    size_t most = 0;
    for (size_t i = 0; i < ls->n; i++) if (ls->l[i].n > most) most = ls->l[i].n;
    if (flag >= 0 && !(buf = malloc((most ? most : 1) * 2 * sizeof *buf))) { Py_XDECREF(out); return PyErr_NoMemory(); }
    for (size_t i = 0; out && i < ls->n; i++) {
        Lane *l = &ls->l[i];
        for (int f = flag < 0 ? -1 : 0; out && f <= (flag < 0 ? -1 : 1); f++) {
            size_t k = f < 0 ? l->n : lane_islands(l, f, buf);
            if (!k) continue;
            const int64_t *pairs = f < 0 ? (const int64_t *)l->v : buf;
            PyObject *b = PyBytes_FromStringAndSize((const char *)pairs, (Py_ssize_t)(k * 2 * sizeof(int64_t)));
            PyObject *row = !b ? NULL : f < 0
                ? Py_BuildValue("(NNN)", value_or_none(l->g, l->gnull), value_or_none(l->d, l->dnull), b)
                : Py_BuildValue("(NNiN)", value_or_none(l->g, l->gnull), value_or_none(l->d, l->dnull), f, b);
            if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
            Py_XDECREF(row);
        }
    }
    free(buf);
    return out;
}

/* One run of islands of one lane: int64 (start, end) pairs in start order, all kernels' or none. */
typedef struct { const int64_t *p; size_t n, at, lane; int k; } Run;

static int run_cmp(const void *a, const void *b) {
    size_t x = ((const Run *)a)->lane, y = ((const Run *)b)->lane;
    return (x > y) - (x < y);
}

/* [(group, dev, busy_part's 7 values)] of each lane of runs (group, dev, kernel flag, bytes of int64 (start, end)
 * pairs in start order): the runs of a lane merged by start into busy_add, a k-way merge (the runs are each in
 * order: the attribution's slices' and busy_islands'), so nothing is sorted again. None where a time is past
 * +-2^62 or a run is not in start order with each end at or after its start. */
static PyObject *py_busy_runs(PyObject *self, PyObject *args) {
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O", &list)) return NULL;
    PyObject *seq = PySequence_Fast(list, "busy_runs: a sequence of (group, dev, kernel, bytes)");
    if (!seq) return NULL;
    Py_ssize_t nitems = PySequence_Fast_GET_SIZE(seq);
    Run *runs = calloc((size_t)nitems + 1, sizeof *runs);
    Lanes ls = {0};
    PyObject *result = NULL;
    int bad = 0;
    size_t nruns = 0;
    if (!runs) { PyErr_NoMemory(); goto done; }
    const int64_t far = (int64_t)1 << 62;
    for (Py_ssize_t i = 0; i < nitems && !bad; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *g, *d, *b;
        int k;
        if (!PyArg_ParseTuple(item, "OOpS", &g, &d, &k, &b)) goto done;
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        if (len % (2 * (Py_ssize_t)sizeof(int64_t))) { bad = 1; break; }
        size_t n = (size_t)len / (2 * sizeof(int64_t));
        if (!n) continue;
        const int64_t *p = (const int64_t *)PyBytes_AS_STRING(b);
        for (size_t j = 0; j < n && !bad; j++)
            bad = p[2 * j] < -far || p[2 * j + 1] > far || p[2 * j + 1] < p[2 * j] || (j && p[2 * j] < p[2 * j - 2]);
        char gn, dn;
        Val gv = {int_of(g, &gn, &bad), 0}, dv = {int_of(d, &dn, &bad), 0};
        gv.null = gn; dv.null = dn;
        if (bad) break;
        Lane *l = lane_of(&ls, gv, dv);
        if (!l) { PyErr_NoMemory(); goto done; }
        runs[nruns++] = (Run){p, n, 0, (size_t)(l - ls.l), k};
    }
    if (bad) { result = Py_NewRef(Py_None); goto done; }
    Busy *parts = calloc(ls.n + 1, sizeof *parts);
    if (!parts) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    qsort(runs, nruns, sizeof *runs, run_cmp);
    for (size_t a = 0, z; a < nruns; a = z) {
        for (z = a; z < nruns && runs[z].lane == runs[a].lane; z++) {}
        Busy *b = &parts[runs[a].lane];
        for (;;) {  /* the run whose next island starts first (a few runs a lane: a linear look) */
            Run *at = NULL;
            for (size_t j = a; j < z; j++)
                if (runs[j].at < runs[j].n && (!at || runs[j].p[2 * runs[j].at] < at->p[2 * at->at])) at = &runs[j];
            if (!at) break;
            int64_t bound = INT64_MAX;  /* the next start of every other run: till then, this run's islands in a row */
            for (size_t j = a; j < z; j++)
                if (&runs[j] != at && runs[j].at < runs[j].n && runs[j].p[2 * runs[j].at] < bound)
                    bound = runs[j].p[2 * runs[j].at];
            do {  /* the slices' runs follow one another in time: each is taken nearly whole */
                busy_add(b, at->p[2 * at->at], at->p[2 * at->at + 1], at->k);
                at->at++;
            } while (at->at < at->n && at->p[2 * at->at] <= bound);
        }
    }
    Py_END_ALLOW_THREADS
    result = lane_rows(&ls, parts);
    free(parts);
done:
    free(runs);
    lanes_free(&ls);
    Py_DECREF(seq);
    return result;
}

/* (process, tid) of each process's main thread: the one whose ranges last longest in all, the smallest id of those
 * with as long (timeline/nvtx._main_threads, which says why). */
static PyObject *main_threads(Ranges *r) {
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < r->ntotals; i++) {
        Total *a = &r->totals[i];
        int best = 1;
        for (size_t j = 0; best && j < r->ntotals; j++) {
            Total *b = &r->totals[j];
            if (j != i && b->p_null == a->p_null && (a->p_null || b->p == a->p)
                && (b->sum > a->sum || (b->sum == a->sum && b->tid < a->tid))) best = 0;
        }
        if (!best) continue;
        PyObject *pair = Py_BuildValue("(NL)", a->p_null ? Py_NewRef(Py_None) : PyLong_FromLongLong(a->p), a->tid);
        if (!pair || PyList_Append(out, pair) < 0) Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    return out;
}

static PyObject *py_sweep(PyObject *self, PyObject *args) {
    if (bind_now() < 0) return NULL;
    const char *uri, *sql;
    PyObject *op_of;
    Guard gd = {NULL, 0, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "ssO|Oi", &uri, &sql, &op_of, &gd.budget, &gd.grain)) return NULL;
    Err err = {{0}, 0};
    Ranges *r;
    Py_BEGIN_ALLOW_THREADS
    r = ranges_read(uri, sql, &gd, &err);
    Py_END_ALLOW_THREADS
    if (guard_raised(&gd)) { ranges_free(r); return NULL; }
    if (!r) {
        if (err.unsupported) Py_RETURN_NONE;
        PyErr_SetString(PyExc_RuntimeError, err.msg);
        return NULL;
    }
    Labels L = {0};
    int32_t *name_op = malloc((r->nnames + 1) * sizeof *name_op);
    size_t kcap = 0, nkinds = 0;
    char *is_layer = NULL, *is_step = NULL;
    PyObject *result = NULL;
    if (!name_op) { PyErr_NoMemory(); goto done; }
    for (int32_t i = 0; i < r->nnames; i++) {  /* each distinct name's op: (op id, layer range?, step range?) */
        PyObject *name = r->text[i] ? PyUnicode_DecodeUTF8(r->text[i], r->len[i], "replace") : Py_NewRef(Py_None);
        PyObject *got = name ? PyObject_CallOneArg(op_of, name) : NULL;
        Py_XDECREF(name);
        long op; int layer, step;
        if (!got || !PyArg_ParseTuple(got, "lpp", &op, &layer, &step) || op < 0 || op > INT32_MAX) {
            Py_XDECREF(got);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "op_of: (op id, layer, step)");
            goto done;
        }
        Py_DECREF(got);
        size_t need = (size_t)op + 1, cap = kcap;
        if (grow((void **)&is_layer, &cap, need, 1) || grow((void **)&is_step, &kcap, need, 1)) { PyErr_NoMemory(); goto done; }
        for (; nkinds < need; nkinds++) is_layer[nkinds] = is_step[nkinds] = 0;
        name_op[i] = (int32_t)op; is_layer[op] = (char)layer; is_step[op] = (char)step;
    }
    L.name_op = name_op; L.is_layer = is_layer; L.is_step = is_step;
    Bounds bounds = {0};
    int rc, oom = 0;
    Segments *g = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = sweep_all(r, &L, &bounds);
    /* the ranges themselves are done with (main_threads reads their per-thread totals): given back before the
     * segments are made, so that the two are never held together */
    free(r->tid); free(r->s); free(r->e); free(r->name);
    r->tid = r->s = r->e = NULL; r->name = NULL; r->n = r->cap = 0;
    if (rc == 0) g = segments_of(&bounds, &oom);  /* takes the boundaries */
    Py_END_ALLOW_THREADS
    if (rc < 0 || oom) { PyErr_NoMemory(); goto done; }
    if (!g) { result = Py_NewRef(Py_None); goto done; }  /* two boundaries at one time of a thread: never here */
    PyObject *held = wrap(g), *pairs = held ? PyList_New((Py_ssize_t)L.npairs) : NULL;
    for (size_t i = 0; pairs && i < L.npairs; i++) {
        PyObject *pair = Py_BuildValue("(ii)", L.pairs[i].scope, L.pairs[i].op);
        if (!pair) { Py_CLEAR(pairs); break; }
        PyList_SET_ITEM(pairs, (Py_ssize_t)i, pair);
    }
    PyObject *main = pairs ? main_threads(r) : NULL;
    result = main ? Py_BuildValue("(NNN)", held, pairs, main) : NULL;
    if (!main) { Py_XDECREF(held); Py_XDECREF(pairs); }
done:
    ranges_free(r);
    free(name_op); free(is_layer); free(is_step); free(L.pairs); free(L.pslot);
    return result;
}

/* ---- the int64 columns of a query (timeline/series_np._read): every row's values stored straight into one array
 * per column, instead of a Python tuple per row handed to numpy (fetchmany: ~0.6 us a row, most of the series'
 * cost). Declines (unsupported) on any value that is not an integer, NULL included: the Python path decides. ---- */
static int columns_read(const char *uri, const char *sql, int ncols, Col *cols, Guard *gd, Err *err) {
    sqlite3 *db = NULL; sqlite3_stmt *st = NULL;
    int rc, out = -1;
    if (S.open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        sql_error(err, db, "capture"); goto done;
    }
    guard_on(db, gd);
    if (S.prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) { sql_error(err, db, "columns"); goto done; }
    if (S.column_count(st) != ncols) { snprintf(err->msg, sizeof err->msg, "columns: not %d columns", ncols); goto done; }
    while ((rc = S.step(st)) == SQLITE_ROW) {
        for (int i = 0; i < ncols; i++) {
            Col *c = &cols[i];
            sqlite3_value *x = S.column_value(st, i);  /* fetched once: its type and integer (see above) */
            if (S.value_type(x) != SQLITE_INTEGER) { err->unsupported = 1; goto done; }
            if (c->n == c->cap && grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v) < 0) {
                snprintf(err->msg, sizeof err->msg, "out of memory"); goto done;
            }
            c->v[c->n++] = S.value_int64(x);
        }
    }
    if (rc != SQLITE_DONE) { sql_error(err, db, "columns"); goto done; }
    out = 0;
done:
    if (st) S.finalize(st);
    if (db) S.close(db);
    return out;
}

static PyObject *py_columns(PyObject *self, PyObject *args) {
    if (bind_now() < 0) return NULL;
    const char *uri, *sql;
    int ncols;
    Guard gd = {NULL, 0, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "ssi|Oi", &uri, &sql, &ncols, &gd.budget, &gd.grain)) return NULL;
    if (ncols < 1 || ncols > 64) { PyErr_SetString(PyExc_ValueError, "columns: 1 to 64 columns"); return NULL; }
    Col *cols = calloc(ncols, sizeof *cols);
    if (!cols) return PyErr_NoMemory();
    Err err = {{0}, 0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = columns_read(uri, sql, ncols, cols, &gd, &err);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (guard_raised(&gd)) {
        /* the signal's exception is the call's */
    } else if (rc == 0) {
        result = PyList_New(ncols);
        for (int i = 0; result && i < ncols; i++) {
            PyObject *b = PyBytes_FromStringAndSize(cols[i].v ? (const char *)cols[i].v : "",
                                                    (Py_ssize_t)(cols[i].n * sizeof(int64_t)));
            free(cols[i].v); cols[i].v = NULL;
            if (!b) Py_CLEAR(result);
            else PyList_SET_ITEM(result, i, b);
        }
    } else if (err.unsupported) {
        result = Py_NewRef(Py_None);
    } else {
        PyErr_SetString(PyExc_RuntimeError, err.msg);
    }
    for (int i = 0; i < ncols; i++) free(cols[i].v);
    free(cols);
    return result;
}

/* ---- the islands of intervals sorted by (group, start) (timeline/series_np._islands, whose numpy this is) ----
 * A row opens an island where it is its group's first or starts after every earlier row of its group ended (a start
 * equal to that end joins the island); an island ends at the largest end of its rows. Returns the first row of each
 * island and its end; None where the groups' widths (largest end - first start + 1) add up to 2^62 or more: the
 * numpy declines those captures (its offsets would overflow) and so does this (the SQL then measures them). */
static PyObject *py_islands(PyObject *self, PyObject *args) {
    Py_buffer g = {0}, s = {0}, e = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*", &g, &s, &e)) return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)g.len / sizeof(int64_t);
    if ((size_t)s.len != n * sizeof(int64_t) || (size_t)e.len != n * sizeof(int64_t) || g.len % sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "islands: three int64 arrays of one length");
        goto done;
    }
    const int64_t *G = g.buf, *S = s.buf, *E = e.buf;
    int64_t *opens = malloc((n ? n : 1) * sizeof *opens), *ends = malloc((n ? n : 1) * sizeof *ends);
    if (!opens || !ends) { free(opens); free(ends); PyErr_NoMemory(); goto done; }
    size_t k = 0;
    int too_wide = 0;
    Py_BEGIN_ALLOW_THREADS
    double widths = 0.0;
    int64_t base = 0, reach = 0;
    for (size_t r = 0; r < n; r++) {
        int first = r == 0 || G[r] != G[r - 1];
        if (first) {
            if (r) widths += (double)reach - (double)base + 1.0;
            base = S[r];
            reach = E[r];
        }
        if (first || S[r] > reach) {
            opens[k] = (int64_t)r;
            ends[k++] = E[r];
        }
        if (E[r] > reach) reach = E[r];
        if (E[r] > ends[k - 1]) ends[k - 1] = E[r];
    }
    if (n) widths += (double)reach - (double)base + 1.0;
    too_wide = widths >= 4611686018427387904.0;  /* 2^62: series_np._FAR */
    Py_END_ALLOW_THREADS
    if (too_wide) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *a = PyBytes_FromStringAndSize((const char *)opens, (Py_ssize_t)(k * sizeof(int64_t)));
        PyObject *b = a ? PyBytes_FromStringAndSize((const char *)ends, (Py_ssize_t)(k * sizeof(int64_t))) : NULL;
        if (a && b) result = PyTuple_Pack(2, a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    free(opens);
    free(ends);
done:
    PyBuffer_Release(&g);
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    return result;
}

/* ---- a side's islands cut into the steps they span (timeline/series_np._cut, whose numpy this is) ----
 * Rows sorted by (group, start), each with end > start, and each row's step index: the islands as py_islands finds
 * them, each cut into the steps it spans from its first row's step (the next step while it starts before the
 * island's end), each piece its step's part of it (start at the latest of the two starts, end at the earliest of the
 * two ends; pieces of 0 ns left out). Returns the pieces (group, step index, start, end) as bytes of int64 arrays,
 * island by island — each (group, step)'s pieces in time order, as _claimed's sweep asks; None where the groups'
 * widths add up to 2^62 or more (as py_islands: the numpy declines those captures). */
static int grow_pieces(int64_t **cols, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap * 2 : 1024;
    while (cap2 < need) cap2 *= 2;
    for (int c = 0; c < 4; c++) {
        int64_t *p = realloc(cols[c], cap2 * sizeof(int64_t));
        if (!p) return -1;
        cols[c] = p;
    }
    *cap = cap2;
    return 0;
}

static PyObject *py_cut_islands(PyObject *self, PyObject *args) {
    Py_buffer g = {0}, s = {0}, e = {0}, ix = {0}, lo = {0}, hi = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*", &g, &s, &e, &ix, &lo, &hi)) return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)g.len / sizeof(int64_t), n_steps = (size_t)lo.len / sizeof(int64_t);
    int64_t *cols[4] = {NULL, NULL, NULL, NULL};
    if ((size_t)s.len != n * sizeof(int64_t) || (size_t)e.len != n * sizeof(int64_t) ||
        (size_t)ix.len != n * sizeof(int64_t) || g.len % sizeof(int64_t) || (size_t)hi.len != (size_t)lo.len ||
        lo.len % sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "cut_islands: four int64 arrays of one length, the steps' starts and ends");
        goto done;
    }
    const int64_t *G = g.buf, *S = s.buf, *E = e.buf, *I = ix.buf, *LO = lo.buf, *HI = hi.buf;
    size_t k = 0, cap = 0;
    int too_wide = 0, no_memory = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    double widths = 0.0;
    int64_t base = 0, reach = 0;
    size_t r = 0;
    while (r < n && !no_memory && !bad) {
        int first = r == 0 || G[r] != G[r - 1];
        if (first) {
            if (r) widths += (double)reach - (double)base + 1.0;
            base = S[r];
            reach = E[r];
        }
        /* the island that row r opens: every later row of its group that starts at or before its reach */
        int64_t group = G[r], start = S[r], end = E[r], step = I[r];
        size_t q = r + 1;
        if (E[r] > reach) reach = E[r];
        while (q < n && G[q] == group && S[q] <= reach) {
            if (E[q] > reach) reach = E[q];
            if (E[q] > end) end = E[q];
            q++;
        }
        if (step < 0 || (size_t)step >= n_steps) { bad = 1; break; }
        for (size_t j = (size_t)step; j < n_steps && (j == (size_t)step || LO[j] < end); j++) {
            int64_t a = start > LO[j] ? start : LO[j], b = end < HI[j] ? end : HI[j];
            if (b <= a) continue;
            if (grow_pieces(cols, &cap, k + 1) < 0) { no_memory = 1; break; }
            cols[0][k] = group;
            cols[1][k] = (int64_t)j;
            cols[2][k] = a;
            cols[3][k++] = b;
        }
        r = q;
    }
    if (n) widths += (double)reach - (double)base + 1.0;
    too_wide = widths >= 4611686018427387904.0;  /* 2^62: series_np._FAR */
    Py_END_ALLOW_THREADS
    if (no_memory) {
        PyErr_NoMemory();
    } else if (bad) {
        PyErr_SetString(PyExc_ValueError, "cut_islands: a step index out of range");
    } else if (too_wide) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *out[4] = {NULL, NULL, NULL, NULL};
        int ok = 1;
        for (int c = 0; c < 4 && ok; c++) {
            out[c] = PyBytes_FromStringAndSize(cols[c] ? (const char *)cols[c] : "", (Py_ssize_t)(k * sizeof(int64_t)));
            ok = out[c] != NULL;
        }
        if (ok) result = PyTuple_Pack(4, out[0], out[1], out[2], out[3]);
        for (int c = 0; c < 4; c++) Py_XDECREF(out[c]);
    }
done:
    for (int c = 0; c < 4; c++) free(cols[c]);
    PyBuffer_Release(&g);
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    PyBuffer_Release(&ix);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    return result;
}

/* ---- each budget part's own time per group (timeline/series_np._claimed, whose numpy this is) ----
 * Pieces sorted by (key = group * nparts + part, start), a part's pieces of one group disjoint (cut from its islands)
 * and none of 0 ns: per group, one sweep over its parts' pieces in time order, a cursor per part; between two events
 * the lowest part covering the time (the first in PARTS' order) claims it. Returns ([group], [part], [ns]) by group
 * then part, none of 0 ns; None where the pieces are not in that order, overlap within a part or last 0 ns (the numpy
 * then measures: it needs only the disjointness, and sorts by itself). */
#define CLAIM_PARTS 16  /* a group's parts are bits of a mask (series_np._claimed: int16) */
static PyObject *py_claimed(PyObject *self, PyObject *args) {
    Py_buffer k = {0}, s = {0}, e = {0};
    int nparts = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*i", &k, &s, &e, &nparts)) return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)k.len / sizeof(int64_t);
    if ((size_t)s.len != n * sizeof(int64_t) || (size_t)e.len != n * sizeof(int64_t) || k.len % sizeof(int64_t) ||
        nparts < 1 || nparts > CLAIM_PARTS) {
        PyErr_SetString(PyExc_ValueError, "claimed: three int64 arrays of one length, 1 to 16 parts");
        goto done;
    }
    const int64_t *K = k.buf, *S = s.buf, *E = e.buf;
    /* at most one row per (group, part): no more than the pieces */
    int64_t *og = malloc((n ? n : 1) * sizeof *og), *ons = malloc((n ? n : 1) * sizeof *ons);
    int *op = malloc((n ? n : 1) * sizeof *op);
    if (!og || !ons || !op) { free(og); free(ons); free(op); PyErr_NoMemory(); goto done; }
    size_t m = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    size_t r = 0;
    while (r < n && !bad) {
        if (K[r] < 0) { bad = 1; break; }
        int64_t group = K[r] / nparts;
        size_t hi[CLAIM_PARTS], cur[CLAIM_PARTS];
        int64_t claim[CLAIM_PARTS];
        int present[CLAIM_PARTS], np_ = 0, on[CLAIM_PARTS];
        size_t q = r;
        while (q < n && K[q] >= 0 && K[q] / nparts == group) {
            int part = (int)(K[q] % nparts);
            size_t a = q;
            if (a > r && K[a] < K[a - 1]) { bad = 1; break; }  /* a part met again after another: out of order */
            for (; q < n && K[q] == K[a]; q++) {
                if (E[q] <= S[q] || (q > a && S[q] < E[q - 1])) { bad = 1; break; }
            }
            if (bad) break;
            cur[part] = a;
            hi[part] = q;
            claim[part] = 0;
            on[part] = 0;
            present[np_++] = part;
        }
        if (bad) break;
        if (q < n && K[q] < K[q - 1]) { bad = 1; break; }  /* the keys in order (a key met again later) */
        int mask = 0;
        int64_t t = 0;
        for (;;) {
            int any = 0;
            int64_t next = 0;
            for (int j = 0; j < np_; j++) {
                int p_ = present[j];
                if (cur[p_] >= hi[p_]) continue;
                int64_t c = on[p_] ? E[cur[p_]] : S[cur[p_]];
                if (!any || c < next) next = c;
                any = 1;
            }
            if (!any) break;
            if (mask) claim[__builtin_ctz((unsigned)mask)] += next - t;
            t = next;
            for (int j = 0; j < np_; j++) {
                int p_ = present[j];
                if (on[p_] && E[cur[p_]] == t) { on[p_] = 0; cur[p_]++; mask &= ~(1 << p_); }
                if (!on[p_] && cur[p_] < hi[p_] && S[cur[p_]] == t) { on[p_] = 1; mask |= 1 << p_; }
            }
        }
        for (int j = 0; j < np_; j++) {  /* by part, as the numpy gives them: present[] ascends (its keys do) */
            if (claim[present[j]] > 0) {
                og[m] = group;
                op[m] = present[j];
                ons[m++] = claim[present[j]];
            }
        }
        r = q;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *a = PyList_New((Py_ssize_t)m), *b = PyList_New((Py_ssize_t)m), *c = PyList_New((Py_ssize_t)m);
        int ok = a && b && c;
        for (size_t i = 0; ok && i < m; i++) {
            PyObject *x = PyLong_FromLongLong(og[i]), *y = PyLong_FromLong(op[i]), *z = PyLong_FromLongLong(ons[i]);
            if (!x || !y || !z) { Py_XDECREF(x); Py_XDECREF(y); Py_XDECREF(z); ok = 0; break; }
            PyList_SET_ITEM(a, (Py_ssize_t)i, x);
            PyList_SET_ITEM(b, (Py_ssize_t)i, y);
            PyList_SET_ITEM(c, (Py_ssize_t)i, z);
        }
        if (ok) result = PyTuple_Pack(3, a, b, c);
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
    }
    free(og);
    free(ons);
    free(op);
done:
    PyBuffer_Release(&k);
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    return result;
}

/* ---- the GPU's rows of the per-step series, assigned and summed (timeline/series_np._assigned and _gpu_side's
 * sums, whose numpy this is; the calls' rows too, _host_assigned) ----
 * tables: [(process code, start, end, x, kernel?)] per table (x: the name's key code of a kernel table, the budget
 * part of a copy or set table, or a call's kind), each an int64 array; key_parts: a kernel's budget part by its key
 * (communication or kernels). A row is kept where its times are sound (series_np._sound: a start after 0, an end at
 * or after it, at most max_duration later), it starts at or after the start of some step (steps sorted by start: the
 * last one starting at or before it, as np.searchsorted(side="right") - 1 finds it), inside ends where given, and
 * before that step's end. Kept rows go, in the tables' order, to out's seven columns (process code, step index,
 * start, end, part, key, kernel?; an empty one is not written); per group (process code * steps + step index):
 * rows, launches, kernel ns, copy ns into stats; per (group, key) cell of kernel rows, launches and ns into cells
 * (an empty pair leaves them out). Returns the number of rows kept; None where a kept row's time lies past +-far or
 * the durations of the kept rows add up to 2^53 or more (series_np declines those captures: the SQL measures). */
#define ROW_COLS 7
#define STAT_COLS 4
static int int64_view(PyObject *o, Py_buffer *b, int writable, size_t n, const char *what) {
    if (PyObject_GetBuffer(o, b, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return -1;
    if (b->len % (Py_ssize_t)sizeof(int64_t) || (n != (size_t)-1 && (size_t)b->len != n * sizeof(int64_t))) {
        PyBuffer_Release(b);
        b->obj = NULL;
        PyErr_Format(PyExc_ValueError, "step_rows: %s: int64 arrays of the right length", what);
        return -1;
    }
    return 0;
}

typedef struct { const int64_t *p, *s, *e, *x; size_t n; int kernel; } RowTable;

static PyObject *py_step_rows(PyObject *self, PyObject *args) {
    PyObject *tables, *outs, *statss, *cellss;
    Py_buffer lo = {0}, hi = {0}, kp = {0};
    long long ends_lo, ends_hi, none_key, far, max_dur;
    int has_ends;
    Py_ssize_t n_groups_steps, n_keys, n_pids;
    if (!PyArg_ParseTuple(args, "O!y*y*LLpLy*LLnnnO!O!O!", &PyList_Type, &tables, &lo, &hi, &ends_lo, &ends_hi,
                          &has_ends, &none_key, &kp, &far, &max_dur, &n_pids, &n_groups_steps, &n_keys,
                          &PyTuple_Type, &outs, &PyTuple_Type, &statss, &PyTuple_Type, &cellss))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nt = PyList_GET_SIZE(tables);
    Py_buffer *bufs = calloc((size_t)(nt * 4 + ROW_COLS + STAT_COLS + 2), sizeof(Py_buffer));
    RowTable *ts = calloc((size_t)(nt ? nt : 1), sizeof(RowTable));
    size_t n_steps = (size_t)lo.len / sizeof(int64_t), total = 0;
    Py_ssize_t nb = 0;
    if (!bufs || !ts) { PyErr_NoMemory(); goto done; }
    if ((size_t)hi.len != n_steps * sizeof(int64_t) || lo.len % (Py_ssize_t)sizeof(int64_t) || !n_steps ||
        n_pids < 1 || n_keys < 1 || (size_t)n_groups_steps != n_steps || PyTuple_GET_SIZE(outs) != ROW_COLS ||
        PyTuple_GET_SIZE(statss) != STAT_COLS || PyTuple_GET_SIZE(cellss) != 2 ||
        (size_t)kp.len != (size_t)n_keys * sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError,
                        "step_rows: steps' starts and ends of one length, a part per key, 7 columns, 4 sums, 2 cells");
        goto done;
    }
    for (Py_ssize_t t = 0; t < nt; t++) {
        PyObject *row = PyList_GET_ITEM(tables, t);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 5) {
            PyErr_SetString(PyExc_ValueError, "step_rows: a table is (process, start, end, x, kernel?)");
            goto done;
        }
        size_t n = (size_t)-1;
        for (int c = 0; c < 4; c++, nb++) {
            if (int64_view(PyTuple_GET_ITEM(row, c), &bufs[nb], 0, n, "a table's columns") < 0) goto done;
            n = (size_t)bufs[nb].len / sizeof(int64_t);
        }
        ts[t] = (RowTable){bufs[nb - 4].buf, bufs[nb - 3].buf, bufs[nb - 2].buf, bufs[nb - 1].buf, n,
                           PyObject_IsTrue(PyTuple_GET_ITEM(row, 4))};
        total += n;
    }
    int64_t *out[ROW_COLS], *stat[STAT_COLS], *cell[2];
    for (int c = 0; c < ROW_COLS; c++, nb++) {  /* a column of length 0: not asked for */
        if (int64_view(PyTuple_GET_ITEM(outs, c), &bufs[nb], 1, (size_t)-1, "the kept rows' columns") < 0) goto done;
        out[c] = bufs[nb].len ? bufs[nb].buf : NULL;
        if (out[c] && (size_t)bufs[nb].len != total * sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "step_rows: a column as long as every table, or empty");
            goto done;
        }
    }
    size_t n_groups = (size_t)n_pids * n_steps;
    for (int c = 0; c < STAT_COLS; c++, nb++) {
        if (int64_view(PyTuple_GET_ITEM(statss, c), &bufs[nb], 1, n_groups, "the groups' sums") < 0) goto done;
        stat[c] = bufs[nb].buf;
    }
    size_t n_cells = 0;
    for (int c = 0; c < 2; c++, nb++) {
        if (int64_view(PyTuple_GET_ITEM(cellss, c), &bufs[nb], 1, (size_t)-1, "the cells") < 0) goto done;
        cell[c] = bufs[nb].buf;
        n_cells = (size_t)bufs[nb].len / sizeof(int64_t);
    }
    if (n_cells && n_cells != n_groups * (size_t)n_keys) {
        PyErr_SetString(PyExc_ValueError, "step_rows: one cell per (process, step, key), or none");
        goto done;
    }
    const int64_t *LO = lo.buf, *HI = hi.buf, *KEY_PART = kp.buf;
    size_t kept = 0;
    int odd = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    unsigned __int128 spent = 0;
    size_t at = 0;  /* the last row's step: rows come nearly in start order, so it is the next row's too, mostly */
    for (Py_ssize_t t = 0; t < nt && !odd && !bad; t++) {
        RowTable T = ts[t];
        for (size_t r = 0; r < T.n; r++) {
            int64_t S = T.s[r], E = T.e[r];
            if (!(E >= S && S > 0 && (uint64_t)E - (uint64_t)S <= (uint64_t)max_dur)) continue;
            if (S < LO[0]) continue;
            if (!(LO[at] <= S && (at + 1 == n_steps || LO[at + 1] > S))) {  /* else: the last step with LO <= S */
                size_t a = 0, b = n_steps;  /* LO[a] <= S < LO[b] (LO[n_steps] past every start) */
                while (b - a > 1) {
                    size_t m = a + (b - a) / 2;
                    if (LO[m] <= S) a = m; else b = m;
                }
                at = a;
            }
            if (has_ends && !(S >= ends_lo && S < ends_hi)) continue;
            if (!(S < HI[at])) continue;
            if (S < -far || S > far || E < -far || E > far) { odd = 1; break; }
            int64_t P = T.p[r], X = T.x[r], key = T.kernel ? X : none_key, d = E - S;
            if (P < 0 || P >= n_pids || key < 0 || key >= n_keys) { bad = 1; break; }
            if (out[0]) out[0][kept] = P;
            if (out[1]) out[1][kept] = (int64_t)at;
            if (out[2]) out[2][kept] = S;
            if (out[3]) out[3][kept] = E;
            if (out[4]) out[4][kept] = T.kernel ? KEY_PART[key] : X;
            if (out[5]) out[5][kept] = key;
            if (out[6]) out[6][kept] = T.kernel;
            kept++;
            spent += (uint64_t)d;
            size_t g = (size_t)P * n_steps + at;
            stat[0][g]++;
            if (T.kernel) {
                stat[1][g]++;
                stat[2][g] = (int64_t)((uint64_t)stat[2][g] + (uint64_t)d);  /* wraps only past 2^63: declined below */
                if (n_cells) {
                    size_t c = g * (size_t)n_keys + (size_t)key;
                    cell[0][c]++;
                    cell[1][c] = (int64_t)((uint64_t)cell[1][c] + (uint64_t)d);
                }
            } else {
                stat[3][g] = (int64_t)((uint64_t)stat[3][g] + (uint64_t)d);
            }
        }
    }
    if (spent >= ((unsigned __int128)1 << 53)) odd = 1;  /* series_np._EXACT: numpy's float64 sums would round */
    Py_END_ALLOW_THREADS
    if (bad) PyErr_SetString(PyExc_ValueError, "step_rows: a process or key code out of range");
    else result = odd ? Py_NewRef(Py_None) : PyLong_FromSize_t(kept);
done:
    for (Py_ssize_t i = 0; i < nb; i++) if (bufs[i].obj) PyBuffer_Release(&bufs[i]);
    free(bufs);
    free(ts);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    PyBuffer_Release(&kp);
    return result;
}

static PyMethodDef methods[] = {
    {"islands", py_islands, METH_VARARGS,
     "islands(group, start, end) -> (bytes of each island's first row, bytes of its end), int64 arrays sorted by (group, "
     "start); None when the groups' widths add up past 2^62"},
    {"cut_islands", py_cut_islands, METH_VARARGS,
     "cut_islands(group, start, end, step, steps' starts, steps' ends) -> bytes of the (group, step, start, end) pieces "
     "of the islands of int64 rows sorted by (group, start), each cut into the steps it spans from its first row's step; "
     "None when the groups' widths add up past 2^62"},
    {"claimed", py_claimed, METH_VARARGS,
     "claimed(key, start, end, nparts) -> ([group], [part], [ns]) of each part's own time per group (the lowest part "
     "covering an instant claims it), int64 arrays sorted by (key = group * nparts + part, start), a part's pieces of a "
     "group disjoint and none of 0 ns; None where they are not"},
    {"step_rows", py_step_rows, METH_VARARGS,
     "step_rows([(process, start, end, x, kernel?)], steps' starts, steps' ends, ends_lo, ends_hi, has_ends, none_key, "
     "key_parts, far, max_duration, processes, steps, keys, 7 row columns, 4 group sums, 2 cell columns (or empty)) -> "
     "rows kept, written to the columns (process, step, start, end, part, key, kernel?) and summed per group (rows, "
     "launches, kernel ns, copy ns) and per (group, key) cell (launches, ns); None where a kept time lies past +-far or "
     "the kept durations add up to 2^53"},
    {"columns", py_columns, METH_VARARGS,
     "columns(capture_uri, sql, ncols[, budget, grain]) -> [bytes of int64] one per column of the rows sql yields; None "
     "when a value is not an integer (NULL included: the Python path decides)"},
    {"sweep", py_sweep, METH_VARARGS,
     "sweep(capture_uri, ranges_sql, op_of[, budget, grain]) -> (segments, [(scope op id, op id)] by label id, [(process, main "
     "thread)]) of the (tid, start, end, name, process) ranges in the sweep's order; op_of(name) -> (op id, layer?, "
     "step?) once per distinct name. None when a value is not an integer, or a name not text (the Python decides)"},
    {"busy_all", py_busy_all, METH_VARARGS,
     "busy_all(capture_uri, sqls[, budget, grain, hold, islands]) -> ([(group, dev, busy_part's result)], restarted) over the "
     "(group, dev, start, end, kernel) rows of every SQL, in no order, holding at most hold intervals per lane (0: all of them; "
     "restarted: a row came too late for the window and every interval was held); with islands, [(group, dev, kernel, bytes "
     "of int64 (start, end) pairs)]: each lane's islands, kernels' and the rest apart, in start order. None for a value that "
     "is not an integer (the SQL and Python path decides)"},
    {"busy_runs", py_busy_runs, METH_VARARGS,
     "busy_runs([(group, dev, kernel, bytes of int64 (start, end) pairs in start order)]) -> [(group, dev, busy_part's "
     "result)] of each lane's runs merged; None for a time past +-2^62 or a run out of order"},
    {"busy", py_busy, METH_VARARGS,
     "busy(capture_uri, sql, params[, budget, grain]) -> (busy_part's result,) of the (start, end, kernel) rows sql yields in start "
     "order; None for a value that is not an integer (the Python loop decides)"},
    {"attribute", py_attribute, METH_VARARGS,
     "attribute(capture_uri, calls_sql, kernels_sql, segments, main_threads[, budget, grain, bounds, max_late, keep]) -> "
     "([(pid, dev, lab, key, via, n, total)], kernels whose duration is NULL[, the kernels' (pid, start, end, key) as "
     "bytes of int64, or None][, lanes: the (group, dev, bytes of int64 (start, end) pairs) islands of the kernels with a "
     "usable duration, or None]), or None (a value that is not an integer or NULL: the SQL decides). lanes (with keep): "
     "kernels_sql yields the busy time's group as an 8th column; cols 0: the islands alone, the columns None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cattr", NULL, -1, methods};

/* Which SQLite to call, decided at each call: a process may hold two. TensorFlow's libtensorflow_cc exports a
 * whole SQLite of its own and is loaded RTLD_GLOBAL: from then on the calls the system libsqlite3 makes to its own
 * exported functions bind to TensorFlow's copy, so calling the system library by its handle mixes the two (measured:
 * a NULL allocator, a segfault, in a Keras process). So: the copy in the global scope when it has every function
 * (the one Python's sqlite3 module then calls too), else the libsqlite3 that module loaded, else any other. */
static int bind_now(void) {
    if (bind_sqlite(RTLD_DEFAULT) == 0) return 0;
    void *lib = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libsqlite3.so.0", RTLD_NOW);
    if (lib && bind_sqlite(lib) == 0) return 0;
    PyErr_SetString(PyExc_RuntimeError, "no SQLite library to call");
    return -1;
}

PyMODINIT_FUNC PyInit__cattr(void) {
    if (bind_now() < 0) {  /* timeline/native.py imports sqlite3 first: its libsqlite3 is loaded */
        PyErr_Clear();
        PyErr_SetString(PyExc_ImportError, "no SQLite library to bind to");
        return NULL;
    }
    return PyModule_Create(&module);
}
