"""The public API of time: what the readers, the exporter, the pipeline and the report share of a capture's timeline.

readers/ parses formats; everything here is about time and the captures it is read from, and other stages import it
by these public names (tests/whole/test_layers.py: no module imports another package's ``_private`` name). It sits
below the readers and imports none of them: only classify (the series' kernel families), text, system, model, errors.

Captures opened once (SQLite, read-only):
  sql          connect_ro / opened / reopened (every query under guard's budget), uri_of, tables, columns, cut (a name
               cut in SQL), EVERYTHING, window_bounds / in_window (a window as SQL bounds), MEMCPY_DIRECTION
  recover      readable / source / pending: a capture with writes pending beside it opens as its committed content
  guard        guard / reading / budget / done, Budget: the schema checked, a budget of SQLite VM steps, signals
  native       the compiled passes (_cattr.c): available, sweep, attribute, busy, busy_all
Windows and steps:
  window       Window, make / parse / refuse, bounds / step_bounds / cut_at / spans, STEP_LIKE, could_mark_a_step
  windows      summary of what a windowed run's processes said (RUN/windows.jsonl), Seen
Time on the GPU:
  busy         busy_time / BusyTime (forked windows) / busy_plan / busy_part / busy_combine: the busy-time union
  nvtx         attribute (kernels → the ops and layers open when they were launched), op_name, borrowed_note
  series       measure / too_big / limit: the per-step series (series_np: the same in numpy; series_tables: Gpu, Api)
Hardware samples:
  hardware     sweep / resolve / stream: samples matched to the launches that ran while each was taken
  gpm          NVML GPM samples beside a run's capture: beside / keep_beside / read / records, SOURCE
  gpu_metrics  nsys GPU metrics in a capture: read / device_ids / kernel_names, SOURCE
  hw_sources   of: which of the two a capture's kernels are matched to

Nothing is imported here: a stage loads only the modules it uses (series_np brings numpy, native the compiled helper).
"""
