"""Pages of the site made from the project's Markdown documents (coverage, calibration).

CommonMark with tables, raw HTML off (it is shown as text), and links kept only when they point
to http(s) or an anchor on the page, the same rule as the rest of the site. An inline code span
that is a record's id links to that record's page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape

from kvrecords.tools import coverage  # a module: coverage places hardware through the site
from kvrecords.tools.site.data import SiteData
from kvrecords.tools.site.formatting import record_href, slug

CALIBRATION = Path("docs") / "calibration.md"


class DocumentPage(NamedTuple):
    """One page from a Markdown document: its file name on the site, title and body."""

    name: str  # "coverage.html"
    label: str  # "coverage", in every page's navigation
    title: str
    body: Markup


def _safe_link(url: str) -> bool:
    return url.startswith(("https://", "http://", "#"))


def render_markdown(text: str, record_ids: set[str], root: str) -> tuple[str, Markup]:
    """The document's first heading (its title) and its body as HTML."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.validateLink = _safe_link  # type: ignore[method-assign]

    def code_inline(_renderer: Any, tokens: Sequence[Token], index: int, *_: Any) -> str:
        code = f"<code>{escape(tokens[index].content)}</code>"
        if tokens[index].content in record_ids:
            return f'<a href="{escape(record_href(slug(tokens[index].content), root))}">{code}</a>'
        return code

    parser.add_render_rule("code_inline", code_inline)
    tokens = parser.parse(text)
    title = next(
        (
            tokens[i + 1].content
            for i, token in enumerate(tokens)
            if token.type == "heading_open" and token.tag == "h1"
        ),
        "",
    )
    return title, Markup(parser.renderer.render(tokens, parser.options, {}))


def document_pages(root: Path, site: SiteData) -> list[DocumentPage]:
    """The coverage page (from the data the site has read) and the calibration page (where
    the docs hold it)."""
    records = [entry.data for entry in site.records]
    record_ids = {data["id"] for data in records}
    sizes = {
        entry.id: entry.model.parameters.total_billions if entry.model.parameters else None
        for entry in site.models
    }
    sources = [("coverage", coverage.coverage_markdown(root, records, site.hardware, sizes))]
    calibration = root / CALIBRATION
    if calibration.is_file():
        sources.append(("calibration", calibration.read_text(encoding="utf-8")))
    pages = []
    for label, text in sources:
        title, body = render_markdown(text, record_ids, "")
        pages.append(DocumentPage(f"{label}.html", label, title, body))
    return pages
