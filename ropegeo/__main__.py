"""``python -m ropegeo``: see :mod:`ropegeo.cli`."""

import sys

from .cli import main

sys.exit(main())
