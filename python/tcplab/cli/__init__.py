"""The `tcplab` command line: `main.py` is the entry point, `options.py` the options the
command groups share, and one module per group (`run.py`, `study.py`, `realstack.py`)."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
