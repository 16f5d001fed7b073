"""KV207: a record's dates are calendar dates, none is in the future, and the source is not
published before the events it reports.

Dates are written ``YYYY-MM-DD`` or, when the source gives only the month, ``YYYY-MM``; the schema
checks the form, this check the calendar. A date given to the month is compared to the month.
"""

from __future__ import annotations

import datetime
from typing import NamedTuple

from kvrecords.dataset.document import Document, JsonPath, dotted
from kvrecords.kv.units import Unknown
from kvrecords.problems import Problem, Rule

DATES = Rule(
    "KV207",
    "dates",
    "Every date is a calendar date, none is after today, and the source is not published before "
    "an event it reports.",
    "2026-13-45 passes a pattern but names no day; a date in the future or an event after the "
    "publication that reports it is a typo that would misplace the record in time.",
    "published: 2026-09-02\ndates:\n  - {event: prefix caching enabled, date: 2026-08-19}",
    "published: 2026-13-45\n# KV207 methodology.source.published is 2026-13-45: month 13 does not exist",
)

_DATE_KEYS = ("published", "date")


class _Date(NamedTuple):
    """A date as written, to the day or to the month."""

    path: JsonPath
    text: str
    day: datetime.date  # the first of the month when only the month is written
    to_the_day: bool

    def key(self, to_the_day: bool) -> tuple[int, ...]:
        """What comparisons use: the month alone unless both dates give the day."""
        day = self.day
        return (day.year, day.month, day.day) if to_the_day else (day.year, day.month)


def date_problems(document: Document, today: datetime.date | None = None) -> list[Problem]:
    """KV207 for every ``published`` and ``date`` value in a schema-valid record."""
    today = today or datetime.date.today()
    problems: list[Problem] = []
    dates: list[_Date] = []
    for path, value in document.leaves.items():
        if not path or path[-1] not in _DATE_KEYS or not isinstance(value, str):
            continue
        parsed = _parse(path, value)
        if isinstance(parsed, Unknown):
            message = f"{dotted(path)} is {value}: {parsed.reason}"
            problems.append(document.problem(DATES, path, message))
            continue
        dates.append(parsed)
        if parsed.day > today:
            message = f"{dotted(path)} is {value}, after today ({today.isoformat()})"
            problems.append(document.problem(DATES, path, message))
    published = [d for d in dates if d.path[-1] == "published"]
    for source in published:
        for event in dates:
            if event.path[-1] != "date":
                continue
            to_the_day = source.to_the_day and event.to_the_day
            if event.key(to_the_day) > source.key(to_the_day):
                what = _event_name(document, event.path)
                message = (
                    f"{dotted(source.path)} is {source.text}, before {what} on {event.text}: a "
                    "source cannot report what happened after it"
                )
                problems.append(document.problem(DATES, source.path, message))
    return problems


def _parse(path: JsonPath, text: str) -> _Date | Unknown:
    """The date ``text`` names, or what is wrong with it."""
    parts = text.split("-")
    try:
        year, month = int(parts[0]), int(parts[1])
        day = int(parts[2]) if len(parts) > 2 else 1
    except (ValueError, IndexError):
        return Unknown(
            "not a date (write YYYY-MM-DD, or YYYY-MM when the source gives only the month)"
        )
    if not 1 <= month <= 12:
        return Unknown(f"month {month} does not exist")
    try:
        return _Date(path, text, datetime.date(year, month, day), len(parts) > 2)
    except ValueError:
        return Unknown(f"{year}-{month:02d} has no day {day}")


def _event_name(document: Document, path: JsonPath) -> str:
    """``the event 'prefix caching enabled'``, from the entry the date belongs to."""
    entry = document.data
    for part in path[:-1]:
        entry = entry[part]
    event = entry.get("event") if isinstance(entry, dict) else None
    return f"the event {event!r}" if event else dotted(path)
