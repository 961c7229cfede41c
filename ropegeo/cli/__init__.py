"""The command line, ``python -m ropegeo``: ``audit``, ``gate-a`` and ``report``; each checks its
arguments, calls the package once, and exits 0 pass, 1 fail, 2 bad input, 3 inconclusive."""

from ropegeo.cli.main import main

__all__ = ["main"]
