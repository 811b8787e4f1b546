"""ingest and the composition of captures into runs and jobs (nvprof_wrap/pipeline)."""
