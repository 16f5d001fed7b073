"""Hardware classes, what the reader's view groups records by.

A hardware id is its own class unless it belongs to a family: ids sharing a chip name before
their first hyphen (``h100-sxm`` and ``h100-pcie`` are the family ``h100``). A record whose
accelerator is not stated joins a family when its host or memory description names exactly
one family's chip (``4x H100, form factor not stated``); otherwise it joins no class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kvrecords.kv.hardware import Hardware


class HardwareClass(NamedTuple):
    """What the reader's view groups by: one hardware id, or a family of them."""

    id: str  # the page's name: a hardware id ('rtx-5090') or a family ('h100')
    name: str  # 'NVIDIA GeForce RTX 5090', 'NVIDIA H100'
    members: tuple[Hardware, ...]  # the hardware files it covers (none: the id has no file)
    family: bool

    @property
    def label(self) -> str:
        return f"{self.id} (any form factor)" if self.family else self.id


class Placement(NamedTuple):
    """Where a record ran, as the site shows and groups it."""

    hardware_class: HardwareClass | None
    text: str  # '8 x h800', '16 x h100, form factor not stated', 'not stated'
    filter_keys: tuple[str, ...]  # the hardware filter's values that match the record

    @property
    def class_id(self) -> str | None:
        return None if self.hardware_class is None else self.hardware_class.id


def _common_words(names: Iterable[str]) -> str:
    split = [name.split() for name in names]
    common: list[str] = []
    for words in zip(*split, strict=False):
        if len(set(words)) != 1:
            break
        common.append(words[0])
    return " ".join(common)


def hardware_families(hardware: Mapping[str, Hardware]) -> dict[str, HardwareClass]:
    """Families: two or more ids that share a chip name (with a digit) before the first hyphen."""
    by_chip: dict[str, list[Hardware]] = {}
    for hardware_id in sorted(hardware):
        chip = hardware_id.split("-", 1)[0]
        if any(character.isdigit() for character in chip):
            by_chip.setdefault(chip, []).append(hardware[hardware_id])
    return {
        chip: HardwareClass(
            chip, _common_words(m.name for m in members) or chip.upper(), tuple(members), True
        )
        for chip, members in by_chip.items()
        if len(members) > 1
    }


def _named_family(
    stated: Mapping[str, Any], families: Mapping[str, HardwareClass]
) -> HardwareClass | None:
    """The one family whose chip the host or memory description names, else None."""
    described = " ".join(str(stated.get(key) or "") for key in ("host", "memory_stated"))
    named = [
        family
        for chip, family in families.items()
        if re.search(rf"(?<![a-z0-9]){re.escape(chip)}(?![a-z0-9])", described, re.IGNORECASE)
    ]
    return named[0] if len(named) == 1 else None


def placement(
    stated: Mapping[str, Any],
    hardware: Mapping[str, Hardware],
    families: Mapping[str, HardwareClass],
) -> Placement:
    """The class and wording of a record's ``methodology.hardware``."""
    accelerator, count = stated.get("accelerator"), stated.get("count")
    times = f"{count} x " if count else ""
    if accelerator:
        family = next((f for f in families.values() if accelerator in _ids(f)), None)
        if family is not None:
            return Placement(family, f"{times}{accelerator}", (family.id, accelerator))
        known = hardware.get(accelerator)
        own = HardwareClass(
            accelerator, known.name if known else accelerator, (known,) if known else (), False
        )
        return Placement(own, f"{times}{accelerator}", (accelerator,))
    family = _named_family(stated, families)
    if family is not None:
        return Placement(family, f"{times}{family.id}, form factor not stated", (family.id,))
    return Placement(None, f"{times}accelerator not stated" if times else "not stated", ())


def _ids(hardware_class: HardwareClass) -> tuple[str, ...]:
    return tuple(member.id for member in hardware_class.members)


def hardware_words(stated: Mapping[str, Any]) -> str:
    """A ``hardware`` mapping in words: '4 x rtx-5090, 128 GB VRAM'."""
    count, accelerator = stated.get("count"), stated.get("accelerator")
    words = f"{count} x " if count else ""
    words += accelerator or ("accelerator not stated" if count else "not stated")
    extra = [stated[key] for key in ("memory_stated", "host", "parallelism") if stated.get(key)]
    return ", ".join([words, *extra])
