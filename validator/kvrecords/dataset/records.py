"""A record's KV bases: the main ``kv_bytes_basis`` and each alternative merged over it.

Every reader of the bases (the checks, explain, export, the site, the scaffold) takes them from
here, so an alternative means the same thing everywhere: the main basis with its keys replaced.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvrecords.dataset.document import JsonPath
from kvrecords.kv.arithmetic import KvReport, kv_report, parse_element_type
from kvrecords.kv.geometry import Model

MAIN_BASIS = "main basis"


class Basis(NamedTuple):
    """One basis as stated: where it stands, how messages name it, its merged fields."""

    path: JsonPath
    label: str  # "main basis" or "alternatives[0]"
    stated: dict[str, Any]


def bases(record: dict[str, Any]) -> list[Basis]:
    """The main basis, then each alternative merged over it."""
    main = record["kv_bytes_basis"]
    found = [Basis(("kv_bytes_basis",), MAIN_BASIS, main)]
    for index, alternative in enumerate(main.get("alternatives", [])):
        path = ("kv_bytes_basis", "alternatives", index)
        found.append(Basis(path, f"alternatives[{index}]", {**main, **alternative}))
    return found


def named_basis(record: dict[str, Any], which: object) -> Basis | None:
    """The basis a fit claim names (``main`` or an alternative's index); None when none is."""
    found = bases(record)
    if which == "main":
        return found[0]
    if isinstance(which, int) and not isinstance(which, bool) and 0 <= which < len(found) - 1:
        return found[which + 1]
    return None


def basis_report(model: Model, stated: dict[str, Any]) -> KvReport:
    """The arithmetic a basis describes; ``ValueError`` when it does not apply to the model."""
    state_dtype = stated.get("state_dtype")
    return kv_report(
        model,
        parse_element_type(stated["dtype"]),
        stated.get("context_tokens") or 0,
        stated["layers_counted"],
        parse_element_type(state_dtype) if state_dtype else None,
    )
