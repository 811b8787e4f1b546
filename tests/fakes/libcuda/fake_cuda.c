/* A stand-in for libcuda.so.1 where no GPU is: the few driver calls a capture window makes (tracer/window.py),
 * with the driver's rules that matter to it — a context is current per thread (none on a new thread), it can be
 * made current on another thread (cuCtxPushCurrent_v2), cuProfilerStart/Stop need one (CUDA_ERROR_INVALID_CONTEXT,
 * 201, without), and cuProfilerStop holds its caller FAKE_CUDA_STOP_MS ms, as nsys does while it stops collecting
 * (measured on an H200: ~3 s). Each profiler call appends "name thread context status" to $FAKE_CUDA_LOG.
 * $FAKE_CUDA_PUSH_FAILS set: cuCtxPushCurrent_v2 refuses (201), so a stop on a helper thread cannot be made.
 * Built by tests/tracer/test_profiler_stop.py: gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o libcuda.so.1 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext;

static __thread CUcontext current;
static __thread CUcontext stack[8];
static __thread int depth;
static int the_context = 42;

static void note(const char *name, CUresult status) {
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%s %lu %p %d\n", name, (unsigned long)pthread_self(), current, status);
    fclose(f);
}

/* What a CUDA runtime does on the job's first CUDA call: make the primary context current on that thread. */
CUresult fake_make_current(void) { current = &the_context; return 0; }

CUresult cuCtxGetCurrent(CUcontext *ctx) { *ctx = current; return 0; }

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    if (!ctx || depth == 8 || getenv("FAKE_CUDA_PUSH_FAILS")) return 201;
    stack[depth++] = current;
    current = ctx;
    return 0;
}

CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
    if (!depth) return 201;
    if (ctx) *ctx = current;
    current = stack[--depth];
    return 0;
}

CUresult cuProfilerStart(void) {
    CUresult status = current ? 0 : 201;
    note("cuProfilerStart", status);
    return status;
}

CUresult cuProfilerStop(void) {
    CUresult status = current ? 0 : 201;
    const char *ms = getenv("FAKE_CUDA_STOP_MS");
    if (status == 0 && ms) {
        long n = atol(ms);
        struct timespec t = {n / 1000, (n % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    note("cuProfilerStop", status);
    return status;
}
