"""``python -m gbc_core``: see :mod:`gbc_core.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
