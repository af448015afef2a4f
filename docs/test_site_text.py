"""What a reader copies from the site works: command-line options survive the build.

Sphinx's smart quotes turn ``--`` in prose into an en dash (``--target`` shows as
``–target``, and the copied option fails). ``conf.py`` turns them off, and the
generated option tables put every option in a code span. This builds the
command-line page alone (MyST, with the site's own ``smartquotes`` setting) and
reads its HTML.
"""

import ast
import html
import importlib
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

if os.environ.get("GBC_CORE_REQUIRE_TEST_DEPS") == "1":  # CI: the docs extra is installed
    application = importlib.import_module("sphinx.application")
    importlib.import_module("myst_parser")
else:
    application = pytest.importorskip("sphinx.application")
    pytest.importorskip("myst_parser")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _cli_reference

from _cli_reference import command_sections, write_cli_reference  # noqa: E402


def _site_setting(name, default):
    """The value ``conf.py`` gives ``name`` (a literal), or Sphinx's ``default``."""
    for node in ast.parse((HERE / "conf.py").read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == name):
            return ast.literal_eval(node.value)
    return default


def _page_text(tmp_path):
    """The text of the command-line page as the site renders it."""
    src = tmp_path / "src"
    (src / "_generated").mkdir(parents=True)
    shutil.copy(HERE / "cli.md", src / "index.md")
    write_cli_reference(src / "_generated" / "cli_options.md")
    smartquotes = _site_setting("smartquotes", True)
    (src / "conf.py").write_text(
        f'extensions = ["myst_parser"]\nsmartquotes = {smartquotes!r}\n'
        'suppress_warnings = ["myst.xref_missing", "ref.doc"]\n')
    app = application.Sphinx(str(src), str(src), str(tmp_path / "html"),
                             str(tmp_path / "doctrees"), "html", status=None,
                             warning=None, freshenv=True)
    app.build(force_all=True)
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_options_are_printed_as_typed(tmp_path):
    text = _page_text(tmp_path)
    mangled = sorted(set(re.findall(r"[\u2013\u2014][A-Za-z][\w-]*", text)))
    assert not mangled, f"options typeset with a dash: {mangled}"
    options = {flag for _, _, rows in command_sections() for flags, _, _ in rows
               for flag in re.findall(r"--[a-z][\w-]*", flags)}
    assert options and all(flag in text for flag in options)


def test_generated_tables_put_options_in_code_spans():
    # Whatever the renderer does to prose, a code span is printed as written.
    options = {flag for _, _, rows in command_sections() for flags, _, _ in rows
               for flag in re.findall(r"--?[A-Za-z][\w-]*", flags)}
    for name, description, rows in command_sections():
        for text in [description] + [meaning for _, _, meaning in rows]:
            prose = re.sub(r"`[^`]*`", "", text)
            bare = [flag for flag in options
                    if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", prose)]
            assert not bare, (name, bare, text)
