"""Sphinx configuration of the gbc-core documentation.

Build (from the repository root, with the ``docs`` extra installed):

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are Markdown (MyST) or reStructuredText; the API reference is generated from
the docstrings (autosummary + numpydoc), the command-line reference from the
command line's own parser (``_cli_reference`` below), and the gallery from the
scripts in ``examples/`` (sphinx-gallery runs each one and keeps its figures).

Adding a page: write ``docs/user_guide/NAME.md`` and list it in the toctree of
``docs/user_guide/index.md``. Adding a public name: add it to its module's
``__all__``; ``docs/api.rst`` lists the modules, and ``tests/test_docstrings.py``
checks every public docstring. Adding an example: ``examples/plot_NAME.py`` with a
docstring title (keep it to a few seconds: CI builds the site on 2 cores).
"""

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # _cli_reference

import gbc_core  # noqa: E402

project = "gbc-core"
author = "gbc-core developers"
copyright = "gbc-core developers"
release = version = gbc_core.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# No typographic quotes and dashes: they would typeset an option written in prose,
# --target, as an en dash and a word, which fails when copied to a terminal
# (test_site_text.py).
smartquotes = False
root_doc = "index"
exclude_patterns = ["_build", "_generated", "**/README.txt", "sg_execution_times.rst"]
templates_path = ["_templates"]

html_theme = "furo"
html_title = f"gbc-core {version}"
html_static_path = []

# ------------------------------------------------------------------ API reference
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    # scikit-learn's metadata-routing setters, generated on the estimator class
    "exclude-members": "set_fit_request, set_score_request",
}
autodoc_typehints = "none"  # numpydoc's Parameters sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# ------------------------------------------------------------------ Markdown pages
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
# The design notes link to files of the repository (tests, benchmarks): those are
# links out of the site, not cross-references.
suppress_warnings = ["myst.xref_missing"]

# ------------------------------------------------------------------ the gallery
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "reset_modules": ("matplotlib",),
    "matplotlib_animations": False,
    "min_reported_time": 1,
}

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
}
# The build must not need the network (CI): intersphinx is only used when the
# inventories are cached; set GBC_CORE_DOCS_OFFLINE=0 to fetch them.
if os.environ.get("GBC_CORE_DOCS_OFFLINE", "1") == "1":
    intersphinx_mapping = {}


def _public_bases(app, name, obj, options, bases):
    """A class's bases as its page shows them: a private base (the built-in losses'
    ``_FusedLoss``, the links' ``_Link``) stands for its own public bases."""

    def public(cls):
        if not cls.__name__.startswith("_"):
            return [cls]
        return [b for base in cls.__bases__ for b in public(base)]

    bases[:] = [b for base in list(bases) for b in public(base)] or [object]


def setup(app):
    app.connect("autodoc-process-bases", _public_bases)
    from _cli_reference import write_cli_reference, write_parameter_table

    write_cli_reference(HERE / "_generated" / "cli_options.md")
    write_parameter_table(HERE / "_generated" / "parameters.md")
