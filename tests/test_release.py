"""A release people can cite: one dataset version, carried by CHANGELOG.md, CITATION.cff and
the exports; the data's licence and the code's stated apart."""

from __future__ import annotations

import re
from typing import Any

import yaml

from conftest import REPO
from kvrecords.dataset.release import DATA_LICENSE, DATA_LICENSE_URL, DATASET_VERSION

# Citation File Format 1.2.0: the keys a file may hold at the top and those it must hold
# (https://github.com/citation-file-format/citation-file-format, schema.json).
CFF_KEYS = {
    "abstract",
    "authors",
    "cff-version",
    "commit",
    "contact",
    "date-released",
    "doi",
    "identifiers",
    "keywords",
    "license",
    "license-url",
    "message",
    "preferred-citation",
    "references",
    "repository",
    "repository-artifact",
    "repository-code",
    "title",
    "type",
    "url",
    "version",
}
CFF_REQUIRED = {"authors", "cff-version", "message", "title"}
CFF_PERSON_KEYS = {"family-names", "given-names", "name-particle", "name-suffix", "affiliation"}
CFF_PERSON_KEYS |= {"alias", "email", "orcid", "website", "address", "city", "country"}
CFF_ENTITY_KEYS = {"name", "alias", "email", "orcid", "website", "address", "city", "country"}
CFF_ENTITY_KEYS |= {"date-end", "date-start", "location", "post-code", "region", "tel", "fax"}


def citation() -> dict[str, Any]:
    # YAML 1.1 reads an unquoted date as a date; CFF wants text, so the file quotes it
    data = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def released() -> tuple[str, str]:
    """The newest release in CHANGELOG.md: its version and date."""
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[:2] == ["How a release is made", "Unreleased"]
    match = re.fullmatch(r"(\d{4}\.\d{1,2}\.\d+) \((\d{4}-\d{2}-\d{2})\)", headings[2])
    assert match, headings[2]
    return match.group(1), match.group(2)


def test_citation_cff_is_cff_1_2_0() -> None:
    data = citation()
    assert CFF_REQUIRED <= set(data) <= CFF_KEYS
    assert data["cff-version"] == "1.2.0"
    assert data["type"] in ("dataset", "software")
    assert isinstance(data["message"], str) and data["message"]
    assert isinstance(data["title"], str) and data["title"]
    assert isinstance(data["authors"], list) and data["authors"]
    for author in data["authors"]:
        # a person (family-names) or an entity (name), with only the keys each may have
        allowed = CFF_ENTITY_KEYS if "name" in author else CFF_PERSON_KEYS
        assert set(author) <= allowed and ("name" in author or "family-names" in author)
    assert re.fullmatch(r"\d{4}-(0[1-9]|1[012])-(0[1-9]|[12]\d|3[01])", data["date-released"])
    assert all(isinstance(k, str) and k for k in data["keywords"])


def test_one_version_in_the_code_the_changelog_and_the_citation() -> None:
    version, date = released()
    assert version == DATASET_VERSION
    data = citation()
    assert (str(data["version"]), data["date-released"]) == (DATASET_VERSION, date)


def test_data_and_code_licences_are_stated_apart() -> None:
    assert citation()["license"] == DATA_LICENSE == "CC-BY-4.0"
    data_licence = (REPO / "LICENSE-DATA.md").read_text(encoding="utf-8")
    assert DATA_LICENSE_URL in data_licence and "(CC-BY-4.0" in data_licence
    code_licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert code_licence.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'license = "Apache-2.0"' in pyproject


def test_the_version_reads_as_year_month_counter() -> None:
    year, month, counter = (int(part) for part in DATASET_VERSION.split("."))
    assert year >= 2026 and 1 <= month <= 12 and counter >= 0
