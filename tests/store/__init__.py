"""The run store (nvprof_wrap/store)."""
