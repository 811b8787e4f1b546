"""Subcommands beyond the readers: the launcher and what builds on it."""
from nvprof_wrap.cli import doctor, run_cmd, verify_cmd

COMMANDS = {"run": run_cmd, "doctor": doctor, "verify": verify_cmd}
try:  # experiment needs the training-health module
    from nvprof_wrap.cli import experiment_cmd

    COMMANDS["experiment"] = experiment_cmd
except ImportError:  # pragma: no cover
    pass
