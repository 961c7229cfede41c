"""``python -m ropegeo``: see :mod:`ropegeo.cli`."""

import os
import sys

try:
    from ropegeo.cli import main

    status = main()
except KeyboardInterrupt:  # Ctrl-C before the command's own handler (importing, building the parser): one line
    print("ropegeo: interrupted", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)  # not sys.exit: an interrupt counted as unhandled would still end the interpreter by SIGINT
sys.exit(status)
