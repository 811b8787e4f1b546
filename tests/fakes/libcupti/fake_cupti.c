/* A stand-in for a profiler's libcupti where no GPU is: cuptiFinalize only, which a capture window calls on nsys'
 * own copy once nsys stopped (tracer/window.py _detach_profilers_cupti). Each call appends
 * "cuptiFinalize thread TAG status" to $FAKE_CUDA_LOG (TAG: -DTAG="..." at build, which copy was called);
 * $FAKE_CUPTI_STATUS sets the status it returns (0 unless set, as CUPTI_SUCCESS).
 * Built by tests/tracer/test_profiler_stop.py: gcc -shared -fPIC -DTAG='"nsys"' -o libcupti.so.13 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TAG
#define TAG "cupti"
#endif

int cuptiFinalize(void) {
    const char *s = getenv("FAKE_CUPTI_STATUS");
    int status = s ? atoi(s) : 0;
    const char *path = getenv("FAKE_CUDA_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "cuptiFinalize %lu %s %d\n", (unsigned long)pthread_self(), TAG, status);
        fclose(f);
    }
    return status;
}

/* Built as the profiler's injection library instead (-DINJECTION): only its name and folder matter. */
#ifdef INJECTION
int InitializeInjection(void) { return 1; }
#endif
