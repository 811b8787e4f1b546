"""The version of nvprof-wrap: one place, read by the package facade, the CLI, the launcher's manifest, the HTML
footer and (pyproject.toml) the build."""
__version__ = "0.1.0"
