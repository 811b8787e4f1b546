"""`run`: backends, the launcher, run folders and their manifest (nvprof_wrap/launch)."""
