"""Developer tools run with `python -m tcplab.tools.<name>` from a checkout."""
