"""The package's layers, enforced: each folder may import only the layers below it.

kv (arithmetic, no I/O) < dataset (files on disk) < checks < runner < tools < cli. ``problems``
is the shared vocabulary every layer but ``kv`` may use; nothing imports the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "validator" / "kvrecords"

# What each layer may import from kvrecords (besides itself).
ALLOWED: dict[str, set[str]] = {
    "problems": set(),
    "kv": set(),
    "dataset": {"kv", "problems"},
    "checks": {"kv", "dataset", "problems"},
    "runner": {"kv", "dataset", "problems", "checks"},
    "tools": {"kv", "dataset", "problems", "checks", "runner"},
    "cli": {"kv", "dataset", "problems", "checks", "runner", "tools"},
    "__main__": {"cli"},
    "__init__": set(),
}


def layer_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def imported_layers(path: Path) -> set[str]:
    """The kvrecords layers a module imports, at module level or inside functions."""
    layers = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "kvrecords":
                names = [f"kvrecords.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        layers |= {name.split(".")[1] for name in names if name.startswith("kvrecords.")}
    return layers


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_known_layer() -> None:
    assert {layer_of(path) for path in MODULES} <= set(ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_the_layers_below_it(path: Path) -> None:
    layer = layer_of(path)
    forbidden = imported_layers(path) - ALLOWED[layer] - {layer}
    assert not forbidden, f"{layer} may not import {sorted(forbidden)}"


def test_the_layer_test_sees_a_violation(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from kvrecords.cli.main import main\n", encoding="utf-8")
    assert imported_layers(module) == {"cli"}


# ---- one home per idea ----------------------------------------------------------------------


def _patterns(node: object) -> list[str]:
    """Every ``pattern`` a JSON Schema holds, at any depth."""
    if isinstance(node, dict):
        own = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        return own + [found for value in node.values() for found in _patterns(value)]
    if isinstance(node, list):
        return [found for value in node for found in _patterns(value)]
    return []


def test_the_schemas_spell_ids_as_the_validator_does() -> None:
    """Editors check files against the schemas and the validator against ``ID_PATTERN``: every
    pattern of a file id (lowercase letters, digits, dots, hyphens) in a schema is that pattern,
    so the two cannot come to disagree."""
    import json

    from kvrecords.dataset.layout import ID_PATTERN

    patterns = [
        pattern
        for path in sorted((PACKAGE.parents[1] / "schema").glob("*.schema.json"))
        for pattern in _patterns(json.loads(path.read_text(encoding="utf-8")))
        if "[a-z0-9.-]" in pattern
    ]
    anchored = {f"^{ID_PATTERN.pattern}$", f"^kv-efficiency/{ID_PATTERN.pattern}$"}
    assert len(patterns) >= 4  # model, hardware and record ids, accelerator links
    assert set(patterns) <= anchored


def test_the_architecture_page_names_modules_that_exist() -> None:
    import re

    repo = PACKAGE.parents[1]
    page = (repo / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"[\w/]+\.py\b", page))
    modules = {path.name for path in MODULES}
    missing = [
        name
        for name in sorted(named)
        if not ((PACKAGE / name).exists() or (repo / name).exists() or name in modules)
    ]
    assert len(named) > 10
    assert not missing, missing
    for layer in ("kv", "dataset", "checks", "runner", "tools", "cli"):
        assert re.search(rf"^ {layer}/ ", page, re.M), layer


def test_the_architecture_page_says_where_each_code_is_declared() -> None:
    """Its list of codes by module is a newcomer's one hop to a check: it names every code."""
    import re

    from test_registry import declared_codes

    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed: dict[str, set[str]] = {}
    pattern = r"((?:`KV\d{3}`(?:-`KV\d{3}`)?(?:,\s|\sand\s)?)+)\s+in\s+`([\w/]+\.py)`"
    for codes, module in re.findall(pattern, page):
        for first, last in re.findall(r"`KV(\d{3})`(?:-`KV(\d{3})`)?", codes):
            numbers = range(int(first), int(last or first) + 1)
            listed.setdefault(module, set()).update(f"KV{n:03d}" for n in numbers)
    declared = {
        path.relative_to(PACKAGE).as_posix(): set(declared_codes(path.read_text(encoding="utf-8")))
        for path in MODULES
    }
    assert {module: codes for module, codes in declared.items() if codes} == listed
