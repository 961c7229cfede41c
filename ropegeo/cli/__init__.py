"""The command line, ``python -m ropegeo`` (or ``ropegeo``): ``audit``, ``gate-a`` and ``report``.

Every subcommand parses and checks its arguments here, calls the package once, and turns the
verdict into an exit status (0 pass, 1 fail, 2 bad input, 3 inconclusive).
"""

from ropegeo.cli.main import main

__all__ = ["main"]
