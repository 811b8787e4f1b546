"""Subcommands beyond the readers: the launcher and what builds on it."""
from nvprof_wrap.cli import run_cmd

COMMANDS = {"run": run_cmd}
