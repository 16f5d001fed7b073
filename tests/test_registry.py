"""The rule registry: each code declared once, beside the checks that report it.

A code's literal (``"KV301"``) stands only in the module that declares its ``Rule``; every other
module reports it through that value, so the check for a code is one hop from its declaration.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kvrecords.checks import registry
from kvrecords.problems import Rule

PACKAGE = Path(__file__).resolve().parents[1] / "validator" / "kvrecords"
CODE = re.compile(r"\bKV\d{3}\b")


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def code_literals(source: str) -> set[str]:
    """The codes named in a module's strings, docstrings (which may discuss codes) aside."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    return {
        code
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
        for code in CODE.findall(node.value)
    }


def declared_codes(source: str) -> list[str]:
    """The codes of the ``Rule(...)`` values a module declares."""
    return [
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Rule"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


MODULES = {
    path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8")
    for path in sorted(PACKAGE.rglob("*.py"))
}


def test_each_code_is_declared_once_and_collected() -> None:
    homes: dict[str, list[str]] = {}
    for name, source in MODULES.items():
        for code in declared_codes(source):
            homes.setdefault(code, []).append(name)
    assert {code: names for code, names in homes.items() if len(names) > 1} == {}
    assert sorted(homes) == sorted(registry.RULES)
    assert list(registry.RULES) == sorted(registry.RULES)


def test_a_code_literal_stands_only_in_the_module_declaring_it() -> None:
    retired = {"checks/registry.py": set(registry.RETIRED)}  # named where they are retired
    strays = {
        name: sorted(code_literals(source) - set(declared_codes(source)) - retired.get(name, set()))
        for name, source in MODULES.items()
    }
    assert {name: codes for name, codes in strays.items() if codes} == {}


def test_a_retired_code_is_never_given_to_another_rule() -> None:
    assert set(registry.RETIRED).isdisjoint(registry.RULES)
    assert all(CODE.fullmatch(code) for code in registry.RETIRED)
    rules_page = registry.markdown()
    assert all(f"- {code} " in rules_page for code in registry.RETIRED)


def test_the_registry_collects_each_family_s_rules() -> None:
    for module in registry.FAMILIES:
        for value in vars(module).values():
            if isinstance(value, Rule):
                assert registry.RULES[value.code] is value


def test_the_literal_test_sees_a_stray_code() -> None:
    probe = 'def f(document):\n    """Reports KV301."""\n    return document.problem("KV301", (), "x")\n'
    assert code_literals(probe) == {"KV301"}
    assert declared_codes(probe) == []
    assert declared_codes('X = Rule("KV999", "n", "s", "w", "p", "f")\n') == ["KV999"]
