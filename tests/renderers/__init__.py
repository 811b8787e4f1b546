"""The output formats, HTML in a browser and a notebook included (nvprof_wrap/renderers)."""
