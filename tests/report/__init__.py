"""Reports built from the store: verdicts, comparisons, training health (nvprof_wrap/report)."""
