"""nvprof-wrap: run a job under a GPU profiler and answer "were tensor cores used, in which precision, for which ops?"."""
__version__ = "0.1.0"
