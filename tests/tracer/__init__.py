"""The CUPTI tracer and what it injects into the job (nvprof_wrap/tracer)."""
