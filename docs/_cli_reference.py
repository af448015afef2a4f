"""The command line's options, written from its own parser for the documentation.

``write_cli_reference(path)`` writes one Markdown section per command: every
option with its metavar, default and help text, as ``gbc-core COMMAND --help``
prints them, so the reference cannot drift from the code.
"""

import argparse
import re
from pathlib import Path


def _default(action):
    if action.default in (None, argparse.SUPPRESS) or isinstance(action, (
            argparse._StoreTrueAction, argparse._HelpAction)):
        return ""
    if isinstance(action.default, list) and not action.default:
        return ""
    return f"`{action.default!r}`"


def _flags(action):
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = ""
    if action.nargs != 0:
        if action.choices:
            metavar = " {" + ",".join(map(str, action.choices)) + "}"
        else:
            metavar = " " + (action.metavar or action.dest.upper())
        if action.nargs == "+":
            metavar += " ..."
    return ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)


#: An option named in a help text (``--target``, ``-o``, ``-vv``), outside code spans.
_OPTION = re.compile(r"(?<![\w`-])(--?[A-Za-z][\w-]*)")


def _escape(text):
    """``text`` on one line for a Markdown table cell, the options it names in code
    spans: as plain text, ``--target`` would be typeset ``–target`` (an en dash),
    which fails when copied to a terminal."""
    text = " ".join((text or "").split()).replace("|", "\\|").replace("%%", "%")
    return _OPTION.sub(r"`\1`", text)


def command_sections():
    """[(command, description, [(flags, default, help), ...])] of every command."""
    from gbc_core.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sections = []
    for name, p in sub.choices.items():
        rows = []
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            text = action.help or ""
            if "%(default)s" in text:
                text = text.replace("%(default)s", str(action.default))
            default = _default(action)
            text = _escape(text)
            if default:  # the column says it
                text = re.sub(r" \(default: [^()]*\)$", "", text)
            rows.append((_flags(action), default, text))
        sections.append((name, _escape(p.description), rows))
    return sections


def write_cli_reference(path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = ["<!-- Written by docs/_cli_reference.py from gbc_core.cli.build_parser(). -->",
           ""]
    for name, description, rows in command_sections():
        out += [f"### `gbc-core {name}`", "", description, ""]
        if rows:
            out += ["| argument | default | meaning |", "| --- | --- | --- |"]
            out += [f"| {flags} | {default} | {text} |" for flags, default, text in rows]
            out.append("")
    text = "\n".join(out) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_parameter_table(path):
    """Every hyper-parameter (``gbc_core._params.PARAMS``): name, default, the values
    it takes and what it does, as the estimator validates them."""
    from gbc_core._params import PARAMS

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = ["<!-- Written by docs/_cli_reference.py from gbc_core._params.PARAMS. -->", "",
           "| parameter | default | values | meaning | command line |",
           "| --- | --- | --- | --- | --- |"]
    for p in PARAMS:
        flag = "--" + p.name.replace("_", "-")
        cli = {"option": f"`{flag}`", "count": f"`{flag}`, `-v` (repeat)"}.get(p.cli, "-")
        out.append(f"| `{p.name}` | `{p.default!r}` | {_escape(p.describe())} | "
                   f"{_escape(p.help)} | {cli} |")
    text = "\n".join(out) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
