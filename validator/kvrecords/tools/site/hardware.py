"""Hardware classes, what the reader's view groups records by.

A hardware id is its own class unless a hardware file names it in a family (``families:
[h100]`` in ``h100-sxm.yaml`` and ``h100-pcie.yaml``); then its class is the widest family it
is in (``a100`` over ``a100-80gb``), so that one page holds every form factor. A record that
states a family instead of an accelerator (``family: h100``: the source does not give the form
factor) joins that family's class; one that states neither joins no class.
"""

from __future__ import annotations

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
    """Every family the hardware files name, with its members."""
    members: dict[str, list[Hardware]] = {}
    for hardware_id in sorted(hardware):
        for family in hardware[hardware_id].families:
            members.setdefault(family, []).append(hardware[hardware_id])
    return {
        family: HardwareClass(
            family, _common_words(m.name for m in found) or family.upper(), tuple(found), True
        )
        for family, found in sorted(members.items())
    }


def _widest(ids: set[str], families: Mapping[str, HardwareClass]) -> HardwareClass | None:
    """The family with the most members among those holding every one of ``ids``."""
    holding = [f for f in families.values() if ids and ids <= set(_ids(f))]
    return max(holding, key=lambda f: (len(f.members), f.id), default=None)


def placement(
    stated: Mapping[str, Any],
    hardware: Mapping[str, Hardware],
    families: Mapping[str, HardwareClass],
) -> Placement:
    """The class and wording of a record's ``methodology.hardware``."""
    accelerator, count = stated.get("accelerator"), stated.get("count")
    times = f"{count} x " if count else ""
    if accelerator:
        widest = _widest({accelerator}, families)
        if widest is not None:
            return Placement(widest, f"{times}{accelerator}", (widest.id, accelerator))
        known = hardware.get(accelerator)
        own = HardwareClass(
            accelerator, known.name if known else accelerator, (known,) if known else (), False
        )
        return Placement(own, f"{times}{accelerator}", (accelerator,))
    stated_family = families.get(stated.get("family") or "")
    if stated_family is not None:
        widest = _widest(set(_ids(stated_family)), families) or stated_family
        keys = tuple(dict.fromkeys((widest.id, stated_family.id)))
        text = f"{times}{stated_family.id}, form factor not stated"
        return Placement(widest, text, keys)
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
