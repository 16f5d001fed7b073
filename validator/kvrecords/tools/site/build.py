"""``kvrecords site build``: gather the dataset once, render every page, write the files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from kvrecords.tools.site.data import gather
from kvrecords.tools.site.documents import document_pages
from kvrecords.tools.site.formatting import page_name
from kvrecords.tools.site.pages import Pages
from kvrecords.tools.site.planner import planner_pages

ASSETS = ("site.css", "site.js")


def build_site(root: Path, out: Path) -> list[Path]:
    """Write the site for the dataset at ``root`` into ``out``; returns the files written.

    The dataset should validate first (``kvrecords validate``); the CLI refuses otherwise.
    """
    site = gather(root)
    documents = document_pages(root, site)
    planners = planner_pages(site)
    pages = Pages(site, documents, planners)
    files: dict[Path, str] = {}
    assets = resources.files("kvrecords.tools.site").joinpath("assets")
    for name in ASSETS:
        files[out / "assets" / name] = assets.joinpath(name).read_text(encoding="utf-8")
    files[out / "index.html"] = pages.index()
    for entry in site.records:
        files[out / "records" / f"{entry.slug}.html"] = pages.record(entry)
    for model in site.models:
        files[out / "models" / f"{model.page}.html"] = pages.model(model)
    for page in site.hardware_pages:
        files[out / "hardware" / f"{page_name(page.hardware_class.id)}.html"] = pages.hardware(page)
    for document in documents:
        files[out / document.name] = pages.document(document)
    for planner in planners:
        files[out / "planner" / f"{planner.name}.html"] = pages.planner(planner)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)
