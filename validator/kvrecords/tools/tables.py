"""Exported tables as typed files: Parquet, and a Frictionless data package of CSV files.

Any ``export.Table`` plugs in: its columns' types say how each value is written. The data
package (``datapackage.json``, Frictionless Data's tabular data package) describes each table's
CSV file, the same text ``kvrecords export --format csv`` writes, with a Table Schema: a field
per column, its type, its description and, for measured figures, the notation CSV writes them
in. The Parquet file keeps every value typed: a measured figure is a struct of ``value``,
``about``, ``min`` and ``max``: ``value`` for an exact figure, ``about`` for an approximate
one, both ``min`` and ``max`` for a range and one of them for a bound, so a range, a bound or an
approximate value is never read as an exact one. Both carry the dataset's version and licence.

pyarrow is an optional dependency (``pip install 'kv-efficiency-records[parquet]'``),
imported only when a Parquet file is written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from kvrecords.dataset.atomic import write_atomically
from kvrecords.dataset.release import (
    DATA_LICENSE,
    DATA_LICENSE_TITLE,
    DATA_LICENSE_URL,
    DATASET_VERSION,
)
from kvrecords.tools.export import COLUMN_TYPES, Column, Table, to_csv

PACKAGE_NAME = "kv-efficiency-records"
PARQUET_EXTRA = "pip install 'kv-efficiency-records[parquet]'"
_NUMBER = r"-?\d+(\.\d+)?([eE][-+]?\d+)?"
# How _flat writes a measured figure: x, ~x (approximate), a-b (a range), <=x or >=x (a bound).
MEASURED_PATTERN = rf"^(~?{_NUMBER}|{_NUMBER}-{_NUMBER}|[<>]={_NUMBER})$"
_MEASURED_PARTS = ("value", "about", "min", "max")


class MissingDependency(Exception):
    """An optional dependency the output needs is not installed."""


# ---- the data package ---------------------------------------------------------------------


def write_datapackage(tables: list[Table], folder: Path) -> list[Path]:
    """Write each table as ``<name>.csv`` and ``datapackage.json`` describing them."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = {
        table.name: to_csv(table.rows, tuple(c.name for c in table.columns)) for table in tables
    }
    written = []
    for name, text in texts.items():
        write_atomically(folder / f"{name}.csv", text)
        written.append(folder / f"{name}.csv")
    descriptor = datapackage(tables, {name: text.encode("utf-8") for name, text in texts.items()})
    write_atomically(folder / "datapackage.json", json.dumps(descriptor, indent=2) + "\n")
    return [*written, folder / "datapackage.json"]


def datapackage(tables: list[Table], files: dict[str, bytes]) -> dict[str, Any]:
    """The ``datapackage.json`` of ``tables``, whose CSV files hold ``files`` (by table name)."""
    return {
        "profile": "tabular-data-package",
        "name": PACKAGE_NAME,
        "title": "kv-efficiency records",
        "description": (
            "A curated dataset of KV-cache efficiency measurements for LLM inference. Every KV "
            "figure is recomputed from the model's geometry file; measured figures are as the "
            "sources give them."
        ),
        "version": DATASET_VERSION,
        "licenses": [{"name": DATA_LICENSE, "path": DATA_LICENSE_URL, "title": DATA_LICENSE_TITLE}],
        "keywords": ["LLM inference", "KV cache", "prefix caching", "KV quantization"],
        "resources": [_resource(table, files[table.name]) for table in tables],
    }


def _resource(table: Table, content: bytes) -> dict[str, Any]:
    return {
        "profile": "tabular-data-resource",
        "name": table.name,
        "path": f"{table.name}.csv",
        "title": table.title,
        "description": table.description,
        "format": "csv",
        "mediatype": "text/csv",
        "encoding": "utf-8",
        "bytes": len(content),
        "hash": f"sha256:{hashlib.sha256(content).hexdigest()}",
        "schema": {
            "fields": [_field(column) for column in table.columns],
            "primaryKey": list(table.primary_key),
            "missingValues": [""],
        },
    }


def _field(column: Column) -> dict[str, Any]:
    """A Table Schema field: the type a CSV cell of this column reads as."""
    field: dict[str, Any] = {
        "name": column.name,
        "description": f"{column.description} ({COLUMN_TYPES[column.type]})",
    }
    constraints: dict[str, Any] = {"required": True} if column.required else {}
    if column.type in ("integer", "number"):
        field["type"] = column.type
    elif column.type == "boolean":
        field.update(type="boolean", trueValues=["true"], falseValues=["false"])
    else:
        field["type"] = "string"
        if column.type == "measured":
            constraints["pattern"] = MEASURED_PATTERN
    if constraints:
        field["constraints"] = constraints
    return field


# ---- Parquet ------------------------------------------------------------------------------


def require_pyarrow() -> None:
    """``MissingDependency`` with the command that installs pyarrow, when it is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as error:
        raise MissingDependency(
            f"Parquet needs pyarrow, an optional dependency ({error}); install it with: "
            f"{PARQUET_EXTRA}"
        ) from None


def parquet_bytes(table: Table) -> bytes:
    """The table as a Parquet file, each column typed, with the dataset's version."""
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    wide = {  # integer columns holding a value past int64: exact decimals instead
        column.name
        for column in table.columns
        if column.type == "integer"
        and any(
            isinstance(row[column.name], int) and not _INT64_MIN <= row[column.name] <= _INT64_MAX
            for row in table.rows
        )
    }
    fields = [
        pa.field(
            column.name,
            pa.decimal128(38, 0) if column.name in wide else _arrow_type(pa, column.type),
            nullable=not column.required,
            metadata={"description": column.description},
        )
        for column in table.columns
    ]
    metadata = {
        "kvrecords.table": table.name,
        "kvrecords.dataset_version": DATASET_VERSION,
        "kvrecords.license": DATA_LICENSE,
        "kvrecords.primary_key": ",".join(table.primary_key),
    }
    schema = pa.schema(fields, metadata=metadata)
    columns = {
        column.name: [
            _wide(row[column.name])
            if column.name in wide
            else _arrow_value(column, row[column.name])
            for row in table.rows
        ]
        for column in table.columns
    }
    arrow_table = pa.Table.from_pydict(columns, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(arrow_table, sink)
    return bytes(sink.getvalue().to_pybytes())


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _wide(value: Any) -> Any:
    """An integer past int64 as an exact decimal (Parquet's decimal128 holds 38 digits)."""
    from decimal import Decimal

    if value is None:
        return None
    if abs(value) >= 10**38:
        raise ValueError(f"{value} has more than 38 digits, more than a Parquet decimal holds")
    return Decimal(value)


def write_parquet(table: Table, path: Path) -> None:
    write_atomically(path, parquet_bytes(table))


def _arrow_type(pa: Any, column_type: str) -> Any:
    if column_type == "measured":
        return pa.struct([(part, pa.float64()) for part in _MEASURED_PARTS])
    return {
        "string": pa.string(),
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
        "strings": pa.list_(pa.string()),
    }[column_type]


def _arrow_value(column: Column, value: Any) -> Any:
    if value is None or column.type != "measured":
        return value
    if isinstance(value, dict):
        return dict.fromkeys(_MEASURED_PARTS) | value
    return dict.fromkeys(_MEASURED_PARTS) | {"value": value}
