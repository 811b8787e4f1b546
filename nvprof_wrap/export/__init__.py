"""Exporters: what a report's captures become besides a rendered report. Unlike a renderer (a Report in, text
out), an exporter reads the captures again — a trace holds every event, which no Report keeps — and streams its
output into a file object the command line opens (trace.py: the Chrome trace-event JSON of ``--format trace``)."""
