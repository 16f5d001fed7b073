"""The dataset's release: its version and the licence of its data.

The version names a release of the data (records, models, hardware and their schemas), not of
the ``kvrecords`` code, which has its own version in pyproject.toml. It is ``YEAR.MONTH.N``
and changes only with a release: CHANGELOG.md's newest release and CITATION.cff carry the same
one (tests/test_release.py holds them together), and every export carries it.
"""

from __future__ import annotations

DATASET_VERSION = "2026.12.0"
# The data (records/, models/, hardware/) is CC-BY-4.0; the code is Apache-2.0 (pyproject.toml).
DATA_LICENSE = "CC-BY-4.0"
DATA_LICENSE_TITLE = "Creative Commons Attribution 4.0 International"
DATA_LICENSE_URL = "https://creativecommons.org/licenses/by/4.0/"
