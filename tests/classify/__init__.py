"""The kernel classifier (nvprof_wrap/classify)."""
