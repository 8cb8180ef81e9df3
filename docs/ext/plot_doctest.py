"""Run the tutorials' ``.. plot::`` blocks once under the doctest builder.

The tutorials are ``.. plot::`` directives in doctest format: the html build
runs them (matplotlib's plot directive) to draw their figures, and shows their
source as doctest blocks.  Under the doctest builder the directive would run
the code a first time while the pages are read, and the builder a second time
to check the outputs.  This extension replaces the directive, for the doctest
builder only, with one that just parses its source: the doctest blocks are
then run once, and checked.
"""

from docutils import nodes
from docutils.parsers.rst import Directive
from matplotlib.sphinxext.plot_directive import PlotDirective


class PlotSourceOnly(Directive):
    """A ``.. plot::`` directive that parses its content and runs nothing."""

    has_content = True
    required_arguments = PlotDirective.required_arguments
    optional_arguments = PlotDirective.optional_arguments
    final_argument_whitespace = PlotDirective.final_argument_whitespace
    option_spec = PlotDirective.option_spec

    def run(self):
        container = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, container)
        return container.children


def _builder_inited(app):
    if app.builder.name == "doctest":
        app.add_directive("plot", PlotSourceOnly, override=True)


def setup(app):
    app.connect("builder-inited", _builder_inited)
    return {"parallel_read_safe": True}
