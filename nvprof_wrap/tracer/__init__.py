"""nvprof-wrap's built-in CUPTI tracer (the "cupti" backend).

``inject/sitecustomize.py`` is put first on PYTHONPATH by the launcher, so every Python process of a job
(children included) imports it at start-up; it calls ``cupti_trace.start()``, which streams CUPTI activity
records into one SQLite file per process under ``$NVPROF_WRAP_CUPTI_DIR``. See docs/cupti-tracer.md.
"""
