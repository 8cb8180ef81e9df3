"""Sphinx configuration of the sparsegrad docs.

The docs document the *installed* package (the compiled kernels live there), so
this file does not put the source tree on sys.path.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "ext"))

import sparsegrad

project = "sparsegrad"
author = "the sparsegrad developers"
copyright = "2026, the sparsegrad developers"
version = release = sparsegrad.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "matplotlib.sphinxext.plot_directive",
    "plot_doctest",
    "coverage_check",
]

autosummary_generate = True
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_member_order = "bysource"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
# "Attributes" sections as field lists: a NamedTuple documents its fields
# once, through autodoc, not twice.
napoleon_use_ivar = True
nitpicky = False
# "dtype" and "shape" name attributes of several classes: an ambiguous type
# reference in a parameter list is not an error.
suppress_warnings = ["ref.python"]

# Run the docstring examples of the API pages with the doctest builder.
doctest_global_setup = "import numpy as np\nimport sparsegrad as sg"

# The tutorials are written as ``.. plot::`` directives in doctest format: the
# html build runs them and draws their figures, and the doctest builder checks
# their outputs (the directive turns the source into doctest blocks; under the
# doctest builder, ext/plot_doctest.py keeps it from running them first).
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]
plot_rcparams = {"figure.dpi": 100}

intersphinx_mapping = {}
html_theme = "furo"
html_title = f"sparsegrad {release}"
html_static_path = ["_static"]
templates_path = ["_templates"]
exclude_patterns = ["_build"]
