#!/usr/bin/env python3
"""Check the file lists of gbc-core's sdist and wheels.

    python .ci/check_dist.py [--bundled-openmp] [--list] DIST [DIST ...]

DIST is an sdist (``.tar.gz``) or a wheel (``.whl``). What must be in them is taken
from the source tree (the files git tracks or would track under ``src/gbc_core`` and
``tests``), so a module, stub or test added later is checked without editing this
script. Fails (exit 1) on a missing required file or on an unwanted one: generated C,
Cython sources in a wheel, compiled objects in the sdist, caches, build leftovers.

``--bundled-openmp`` also requires the OpenMP runtime inside a wheel, as the
repair tools put it there: libgomp (auditwheel, Linux), libomp (delocate, macOS),
vcomp140 (delvewheel, Windows).
"""

import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "gbc_core"
DIST_NAME = "gbc_core"

# Never in any distribution.
UNWANTED_ANYWHERE = [
    "*.c", "*.cpp", "*.html", "*.pyc", "*.pyo", "*/__pycache__/*", "*.o", "*.obj",
    "*/.pytest_cache/*", "*/.hypothesis/*", "*.orig", "*.rej", "*~", "*/.DS_Store",
]
# Not in the sdist: compiled objects and repository-only directories.
UNWANTED_SDIST = [
    "*.so", "*.pyd", "*.dylib", "*.dll", "*/build/*", "*/dist/*", "*/wheelhouse/*",
    "*/.git/*", "*/.github/*", "*/.ci/*", "*/.venv*", "*/benchmarks/*",
]
# Not in a wheel: Cython sources, tests, build metadata.
UNWANTED_WHEEL = [
    "*.pyx", "*.pxd", "*.h", "tests/*", "*/tests/*", "build/*", "*.egg-info/*", "*/conftest.py",
]
OPENMP_RUNTIME = {
    "linux": rf"{PKG}\.libs/libgomp[-.][^/]*\.so[^/]*",
    "macosx": rf"{PKG}/\.dylibs/libomp\.dylib",
    "win": rf"{PKG}\.libs/vcomp140[^/]*\.dll",
}


def source_files(root):
    """Files of the source tree: tracked or untracked-but-not-ignored (git), else a walk."""
    try:
        if not (root / ".git").exists():
            raise OSError("not a git checkout")
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
            check=True, capture_output=True, text=True,
        ).stdout
        files = [f for f in out.split("\0") if f]
        return sorted(f for f in files if (root / f).is_file())
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "build", "dist", "wheelhouse", "__pycache__", ".pytest_cache"}
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith(".venv")
                           and not d.endswith(".egg-info")]
            for name in filenames:
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                if not name.endswith((".c", ".so", ".pyd", ".pyc", ".html")):
                    files.append(rel)
        return sorted(files)


def package_version(root):
    text = (root / "src" / PKG / "_version.py").read_text()
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M)
    if not match:
        raise SystemExit("cannot read __version__ from src/gbc_core/_version.py")
    return match.group(1)


def matches(name, patterns):
    padded = "/" + name  # so "*/x/*" also matches a top-level "x/"
    return [p for p in patterns if fnmatch.fnmatch(name, p) or fnmatch.fnmatch(padded, p)]


def check_sdist(path, src, version):
    problems = []
    with tarfile.open(path) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
    top = f"{DIST_NAME}-{version}"
    if not Path(path).name == f"{top}.tar.gz":
        problems.append(f"file name {Path(path).name!r}, expected {top}.tar.gz")
    names = []
    for m in members:
        if not m.name.startswith(top + "/"):
            problems.append(f"entry outside {top}/: {m.name}")
            continue
        names.append(m.name[len(top) + 1:])
    have = set(names)
    required = {"PKG-INFO", "pyproject.toml", "setup.py", "README.md", "LICENSE",
                "MANIFEST.in", "CHANGELOG.md"}
    for f in src:
        if f.startswith(f"src/{PKG}/") and (
            f.endswith((".py", ".pyi", ".pyx", ".pxd", ".h", ".gz")) or Path(f).name in ("py.typed", "NOTICE")
        ):
            required.add(f)
        elif f.startswith("tests/"):
            required.add(f)
    if not any(f.startswith("tests/test_") for f in have):
        problems.append("no tests/test_*.py")
    for f in sorted(required - have):
        problems.append(f"missing: {f}")
    for name in names:
        bad = matches(name, UNWANTED_ANYWHERE + UNWANTED_SDIST)
        if bad:
            problems.append(f"unwanted: {name} (matches {bad[0]})")
    return names, problems


def check_wheel(path, src, version, bundled_openmp):
    problems = []
    fname = Path(path).name
    parts = fname[:-4].split("-")
    if len(parts) != 5 or parts[0] != DIST_NAME or parts[1] != version:
        problems.append(f"file name {fname!r} does not match {DIST_NAME}-{version}-*.whl")
    platform_tag = parts[-1] if parts else ""
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        dist_info = f"{DIST_NAME}-{version}.dist-info"
        metadata = zf.read(f"{dist_info}/METADATA").decode() if f"{dist_info}/METADATA" in names else ""
    have = set(names)
    required = {f"{dist_info}/{n}" for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt",
                                             "licenses/LICENSE")}
    required.add(f"{dist_info}/licenses/src/{PKG}/datasets/data/NOTICE")
    compiled = []
    for f in src:
        if not f.startswith(f"src/{PKG}/"):
            continue
        rel = f[len("src/"):]
        if f.endswith((".py", ".pyi", ".gz")) or Path(f).name in ("py.typed", "NOTICE"):
            required.add(rel)
        elif f.endswith(".pyx"):
            compiled.append(rel[:-len(".pyx")])
    for f in sorted(required - have):
        problems.append(f"missing: {f}")
    for mod in compiled:
        pattern = re.compile(re.escape(mod) + r"\.[^/]+\.(so|pyd)$")
        if not any(pattern.match(n) for n in names):
            problems.append(f"missing compiled module: {mod}.*.so/.pyd")
    if f"Requires-Dist: numpy" not in metadata:
        problems.append("METADATA has no numpy requirement")
    allowed_top = (f"{PKG}/", f"{PKG}.libs/", f"{dist_info}/")
    for name in names:
        if not name.startswith(allowed_top):
            problems.append(f"unwanted top-level entry: {name}")
        bad = matches(name, UNWANTED_ANYWHERE + UNWANTED_WHEEL)
        if bad:
            problems.append(f"unwanted: {name} (matches {bad[0]})")
        if (name.startswith(f"{PKG}/.dylibs/") or name.startswith(f"{PKG}.libs/")) and not bundled_openmp:
            problems.append(f"bundled library in a wheel not expected to bundle one: {name}")
    if bundled_openmp:
        kind = next((k for k in OPENMP_RUNTIME if platform_tag.startswith(k)
                     or (k == "linux" and "linux" in platform_tag)), None)
        if kind is None:
            problems.append(f"unknown platform tag {platform_tag!r} for --bundled-openmp")
        elif not any(re.fullmatch(OPENMP_RUNTIME[kind], n) for n in names):
            problems.append(f"OpenMP runtime not bundled (expected {OPENMP_RUNTIME[kind]})")
    return names, problems


def summarize(names):
    groups = {}
    for n in names:
        if n.endswith((".so", ".pyd")) and "/" in n and ".libs/" not in n and ".dylibs/" not in n:
            key = "compiled modules"
        elif ".libs/" in n or ".dylibs/" in n:
            key = "bundled libraries"
        elif n.endswith(".pyi") or n.endswith("py.typed"):
            key = "typing (.pyi, py.typed)"
        elif n.endswith(".py"):
            key = "tests (.py)" if n.startswith("tests/") else ".py files"
        elif ".dist-info/" in n or ".egg-info/" in n or n == "PKG-INFO":
            key = "metadata"
        elif n.endswith((".pyx", ".pxd", ".h")):
            key = "Cython sources"
        elif "/datasets/data/" in n:
            key = "package data"
        else:
            key = "other"
        groups.setdefault(key, []).append(n)
    return groups


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dists", nargs="+", type=Path)
    ap.add_argument("--bundled-openmp", action="store_true",
                    help="wheels must contain the OpenMP runtime (repaired wheels)")
    ap.add_argument("--list", action="store_true", help="print every file")
    ap.add_argument("--source-root", type=Path, default=ROOT,
                    help="source tree the distributions were built from (default: this checkout)")
    args = ap.parse_args(argv)
    src = source_files(args.source_root)
    version = package_version(args.source_root)
    failed = False
    for path in args.dists:
        if path.name.endswith(".tar.gz"):
            names, problems = check_sdist(path, src, version)
        elif path.suffix == ".whl":
            names, problems = check_wheel(path, src, version, args.bundled_openmp)
        else:
            print(f"{path}: not an sdist or a wheel", file=sys.stderr)
            return 2
        groups = summarize(names)
        detail = ", ".join(f"{k}: {len(v)}" for k, v in sorted(groups.items()))
        status = "FAIL" if problems else "ok"
        print(f"[{status}] {path.name}: {len(names)} files ({detail})")
        if args.list or groups.get("bundled libraries"):
            for key in sorted(groups):
                if args.list or key == "bundled libraries":
                    for n in sorted(groups[key]):
                        print(f"        {n}")
        for p in problems:
            print(f"    - {p}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
