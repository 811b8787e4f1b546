/* Issue 17.3 prototype (benchmark only, not shipped): how fast can a compiled pass join every kernel of an Nsight
 * Systems export to its launch call by correlation id and sum kernel time per (launching thread, kernel name)?
 * Reads both tables once in rowid order through SQLite's C API, matches correlation ids in an open-addressing hash
 * table, aggregates in another. Compare with the GROUP BY floor (benchmarks/suite/floors.py FLOOR_NSYS).
 *
 *   cc -O2 -o /tmp/corr_join benchmarks/native/corr_join.c -lsqlite3 && /tmp/corr_join CAPTURE.sqlite
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

typedef struct { int64_t corr; int64_t tid; int64_t t; } Launch;
typedef struct { int64_t tid, name; int64_t n, ns; int used; } Agg;

static uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; return x; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: corr_join CAPTURE.sqlite\n"); return 2; }
    sqlite3 *db; sqlite3_stmt *st;
    double t0 = now();
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) { fprintf(stderr, "open failed\n"); return 2; }
    int64_t nr = 0;
    sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME", -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW) nr = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    size_t cap = 1; while (cap < (size_t)nr * 2) cap <<= 1;
    Launch *h = calloc(cap, sizeof(Launch));
    sqlite3_prepare_v2(db, "SELECT correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(st, 0);
        size_t i = mix((uint64_t)c) & (cap - 1);
        while (h[i].corr) i = (i + 1) & (cap - 1);
        h[i].corr = c; h[i].tid = sqlite3_column_int64(st, 1); h[i].t = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    double t1 = now();
    size_t acap = 1 << 16; Agg *agg = calloc(acap, sizeof(Agg));
    int64_t kernels = 0, matched = 0;
    sqlite3_prepare_v2(db, "SELECT correlationId, demangledName, \"end\" - start FROM CUPTI_ACTIVITY_KIND_KERNEL", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(st, 0), name = sqlite3_column_int64(st, 1), ns = sqlite3_column_int64(st, 2);
        size_t i = mix((uint64_t)c) & (cap - 1);
        while (h[i].corr && h[i].corr != c) i = (i + 1) & (cap - 1);
        int64_t tid = h[i].corr ? h[i].tid : -1;
        matched += h[i].corr != 0;
        size_t j = mix((uint64_t)(tid * 1000003 + name)) & (acap - 1);
        while (agg[j].used && !(agg[j].tid == tid && agg[j].name == name)) j = (j + 1) & (acap - 1);
        if (!agg[j].used) { agg[j].used = 1; agg[j].tid = tid; agg[j].name = name; }
        agg[j].n++; agg[j].ns += ns; kernels++;
    }
    sqlite3_finalize(st);
    double t2 = now();
    int64_t groups = 0; for (size_t j = 0; j < acap; j++) groups += agg[j].used;
    printf("%lld kernels, %lld matched to a launch call, %lld (thread, name) groups; launch calls read and hashed "
           "%.2f s, kernels read, joined and summed %.2f s, total %.2f s\n", (long long)kernels, (long long)matched,
           (long long)groups, t1 - t0, t2 - t1, t2 - t0);
    sqlite3_close(db); free(h); free(agg);
    return 0;
}
