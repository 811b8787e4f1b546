"""Launch a job under a profiler: backends (nvprof, nsys, cupti), the job runner, the manifest."""
