"""Docstrings written once: a line ``<<name>>`` of a docstring stands for the
piece ``name`` of a table (which may hold pieces itself), indented as that line.

The Booster's scoring methods share their ``X`` and ``n_jobs`` (``_booster``); the
links and the losses share their parameters and sections (``_link``, ``_loss``).
The pieces are filled in when the class is defined, so ``help()``, numpydoc and the
rendered pages see whole docstrings.
"""

import re
import textwrap

_PLACE = re.compile(r"^( *)<<(\w+)>>$", flags=re.M)


def fill_docs(pieces):
    """A class decorator: the class's docstring and those of its methods and
    properties, each line ``<<name>>`` replaced by ``pieces[name]``."""

    def fill(text):
        return _PLACE.sub(lambda m: textwrap.indent(fill(pieces[m.group(2)]), m.group(1)),
                          text)

    def decorate(cls):
        if cls.__doc__ and "<<" in cls.__doc__:
            cls.__doc__ = fill(cls.__doc__)
        for value in vars(cls).values():
            f = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if callable(f) and isinstance(f.__doc__, str) and "<<" in f.__doc__:
                f.__doc__ = fill(f.__doc__)
        return cls

    return decorate
