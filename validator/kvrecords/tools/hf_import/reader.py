"""Reading a config's fields: each failure is a ``ConfigError`` that names the field."""

from __future__ import annotations

from typing import Any

# Said whenever a config cannot be imported: the other way to a model file.
BY_HAND = (
    "or write models/<id>.yaml by hand, following schema/model.schema.json and docs/conventions.md"
)


class ConfigError(ValueError):
    """The config cannot be imported: a field is missing or wrong, or the type is unknown."""


class ConfigReader:
    """A config's fields for one model_type, and the notes that say how they were read."""

    def __init__(self, fields: dict[str, Any], model_type: str, known_family: bool) -> None:
        self.fields = fields
        self.model_type = model_type
        # False for a model_type read only through its layer_types: no family default applies.
        self.known_family = known_family
        self.notes: list[str] = []

    def has(self, name: str) -> bool:
        return self.fields.get(name) is not None

    def raw(self, name: str) -> Any:
        return self.fields.get(name)

    def missing(self, name: str, why: str = "") -> ConfigError:
        reason = f": {why}" if why else ""
        return ConfigError(
            f"config has no {name} (needed for model_type {self.model_type}){reason}"
        )

    def required(self, name: str, why: str = "") -> int:
        """A required positive integer field."""
        value = self.fields.get(name)
        if value is None:
            raise self.missing(name, why)
        return self._positive(name, value)

    def optional(self, name: str) -> int | None:
        """A positive integer field, or None when the config does not give it."""
        value = self.fields.get(name)
        return None if value is None else self._positive(name, value)

    def non_negative(self, name: str, why: str = "") -> int:
        """A required integer field that may be 0 (a layer index or an offset)."""
        value = self.fields.get(name)
        if value is None:
            raise self.missing(name, why)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"config field {name} must be a non-negative integer, got {value!r}")
        return value

    def first_of(self, names: tuple[str, ...], why: str = "") -> int:
        """The first of several alternative field names that is set."""
        for name in names:
            if self.has(name):
                return self.required(name)
        raise self.missing(" or ".join(names), why)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @staticmethod
    def _positive(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"config field {name} must be a positive integer, got {value!r}")
        return value


def reader_for(config: dict[str, Any], model_type: str, known_family: bool) -> ConfigReader:
    """A reader over the config; a multimodal config's text_config fields take precedence."""
    text = config.get("text_config")
    if not isinstance(text, dict):
        return ConfigReader(config, model_type, known_family)
    fields = {**config, **text, "model_type": model_type}
    reader = ConfigReader(fields, model_type, known_family)
    reader.note("The geometry is read from the config's text_config (the language model).")
    return reader
