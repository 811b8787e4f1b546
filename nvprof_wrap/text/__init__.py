"""Text: kernel names demangled (demangle.py), shortened and grouped (names.py), made safe to print (sanitize.py)."""
