"""The dataset as a static web site: a sortable, filterable table, one page per record, per
model and per accelerator class, and the coverage and calibration documents (``documents``).

The site is plain files: HTML from Jinja2 templates with autoescaping (``templates/``), one
hand-written CSS file and one JS file (``assets/``), and charts drawn as inline SVG
(``charts``). Nothing is fetched at view time; only ``<a href>`` may point outside the site,
and only to http(s). ``data`` reads the dataset once and derives each record's figures once
(``figures``: each run's TTFT and decode rate at its context, each baseline-to-treatment
comparison as how many times better); ``pages`` renders; ``build`` writes.
Jinja2 is imported here only, so nothing on the validate path loads it.
"""

from kvrecords.tools.site.build import build_site
from kvrecords.tools.site.formatting import format_bytes, format_tokens, slug

__all__ = ["build_site", "format_bytes", "format_tokens", "slug"]
