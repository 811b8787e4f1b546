"""The public API of time (nvprof_wrap/timeline): captures opened once, windows, steps, NVTX ranges, series,
hardware samples, SQL helpers."""
