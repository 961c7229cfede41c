"""``python -m ropegeo.examples [PATH]``: copy Llama 3.1 8B's ``config.json`` to PATH (default
``config.json`` here), to try ``--config PATH`` on a file of your own."""

import shutil
import sys

from ropegeo.examples import CONFIG

__all__ = []


def _main(argv: list[str]) -> int:
    target = argv[0] if argv else "config.json"
    try:
        shutil.copyfile(CONFIG, target)
    except OSError as exc:
        print(f"ropegeo.examples: cannot write {target!r} ({exc.strerror})", file=sys.stderr)
        return 2
    print(target)
    return 0


if __name__ == "__main__":  # pragma: no cover - python -m ropegeo.examples
    sys.exit(_main(sys.argv[1:]))
