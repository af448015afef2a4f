"""Every code block of the README and of the documentation's pages runs.

Run by ``.ci/run`` (``python -m pytest docs/test_code_blocks.py``), from a checkout:
the files are the repository's, not the installed package's, so this is not part
of ``tests/`` (which also runs against an installed wheel, without them).

For each Markdown file (``README.md``, ``docs/**/*.md``): its fenced ``python``
blocks run in order in one namespace, in a temporary directory (what they write
stays there), so a block may use the names of the blocks above it, as a reader
does. ``bash`` blocks run too, line by line, where every command is
``gbc-core ...`` (the batch commands; the files they read are made by a hidden
setup block). A hidden block

    <!-- setup
    python code
    -->

runs before the next block without being shown (it makes data files, starts a
local Dask cluster). A block that cannot run in CI (an install, the test suite
itself, a benchmark of minutes) is preceded by ``<!-- not run: REASON -->``; only
``bash`` blocks may be, and the test lists them. Every other fenced block must be
of a language that is not code (``text``, ``json``, none).
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md")
    if "_build" not in p.parts and "_generated" not in p.parts
    and "auto_examples" not in p.parts)

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
SETUP = re.compile(r"^<!-- setup\n(?P<code>.*?)^-->$", re.S | re.M)
NOT_RUN = re.compile(r"<!-- not run: (?P<why>[^>]+) -->\s*$")
RUN = {"python", "bash"}
NOT_CODE = {"", "text", "json", "console-output", "toml"}


def blocks(path):
    """[(line, language, code, not-run reason or None)] of ``path``, with the hidden
    setup blocks as language "python" too."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in SETUP.finditer(text):
        found.append((text.count("\n", 0, m.start()) + 1, "python", m.group("code"), None))
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group("indent")), m.group("fence"), m.group("info").strip()
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:])
            i += 1
        i += 1
        language = info.split()[0] if info else ""
        if language.startswith("{"):  # a MyST directive (toctree, include)
            continue
        before = "\n".join(lines[max(0, start - 2):start])
        skip = NOT_RUN.search(before)
        found.append((start + 1, language, "\n".join(body) + "\n",
                      skip.group("why") if skip else None))
    return sorted(found, key=lambda b: b[0])


def _run_bash(path, line, code, cwd):
    for command in code.splitlines():
        command = command.split("  #")[0].strip()
        if not command:
            continue
        args = shlex.split(command)
        assert args[0] == "gbc-core", (
            f"{path.name}:{line}: a bash block that runs must hold gbc-core commands only "
            f"(or be marked <!-- not run: REASON -->), got {command!r}")
        proc = subprocess.run([sys.executable, "-m", "gbc_core", *args[1:]], cwd=cwd,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (
            f"{path.name}:{line}: {command!r} exited {proc.returncode}:\n{proc.stderr}")


def _joined(code):
    return re.sub(r"\\\n\s*", " ", code)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_code_blocks_run(path, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    skipped = []
    try:
        for line, language, code, not_run in blocks(path):
            if not_run is not None:
                assert language == "bash", (
                    f"{path.name}:{line}: only bash blocks may be left out, not {language}")
                skipped.append(line)
                continue
            if language == "python":
                exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
            elif language == "bash":
                _run_bash(path, line, _joined(code), tmp_path)
            else:
                assert language in NOT_CODE, (
                    f"{path.name}:{line}: a {language!r} block is neither run nor text")
    finally:
        closer = namespace.get("_close")
        if callable(closer):
            closer()
        import matplotlib.pyplot as plt

        plt.close("all")


def test_the_left_out_blocks_are_listed():
    """What does not run, and why (the list changes only with intent)."""
    left_out = {f"{p.relative_to(ROOT)}:{line}": why for p in FILES
                for line, _, _, why in blocks(p) if why is not None}
    assert all(left_out.values())
    print("\n".join(f"{k}: {v}" for k, v in left_out.items()))
