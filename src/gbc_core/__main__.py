"""``python -m gbc_core``: see :mod:`gbc_core.cli`."""

from .cli import console_main

if __name__ == "__main__":
    console_main()
