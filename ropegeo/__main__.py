"""``python -m ropegeo``: see :mod:`ropegeo.cli`."""

import sys

try:
    from ropegeo.cli import main
except KeyboardInterrupt:  # Ctrl-C while the package is still importing: the same one line as later
    print("ropegeo: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
