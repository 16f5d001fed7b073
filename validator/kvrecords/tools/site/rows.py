"""A record's export row, from data already read.

``export.rows`` reads every record itself; the site has each record in memory already, so this
builds the same row (the same keys and values: a test compares them) from the parsed data.
Once ``export`` builds a row from parsed data itself, this module goes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kvrecords.dataset.records import basis_report, headline_figures
from kvrecords.dataset.release import DATASET_VERSION
from kvrecords.kv.geometry import Model, Parallel
from kvrecords.kv.units import round_up


def _whole(value: Fraction | None) -> int | None:
    """Exact bytes as a number: whole bytes stay integers, sub-byte totals round up."""
    return None if value is None else round_up(value)


def _geometry_summary(model: Model) -> str:
    parts = []
    for group in model.groups:
        if isinstance(group, Parallel):
            parts.append(f"{group.layers} parallel ({' + '.join(m.kind for m in group.mixers)})")
        else:
            parts.append(f"{group.layers} {group.kind}")
    return ", ".join(parts)


def export_row(data: dict[str, Any], model: Model, display: str) -> dict[str, Any]:
    """The row ``export.rows`` gives for one record, from data already read."""
    basis = data["kv_bytes_basis"]
    report = basis_report(model, basis)
    context = basis.get("context_tokens")
    methodology = data["methodology"]
    source, hardware = methodology["source"], methodology["hardware"]
    return {
        "id": data["id"],
        "title": data.get("title"),
        "techniques": data.get("techniques", []),
        "model": data["model"],
        "model_name": model.name,
        "model_layers": model.num_layers,
        "model_geometry": _geometry_summary(model),
        "accelerator": hardware.get("accelerator"),
        "accelerator_count": hardware.get("count"),
        "engine": methodology["engine"]["name"],
        "engine_version": methodology["engine"].get("version"),
        "weights_precision": methodology.get("weights_precision"),
        "context_tokens": context,
        "kv_dtype": basis["dtype"],
        "kv_dtype_stated": basis["dtype_stated"],
        "layers_counted": basis["layers_counted"],
        "bytes_per_token": _whole(report.bytes_per_token),
        "kv_bytes_at_context": _whole(report.kv_bytes_at_context) if context else None,
        "fixed_state_bytes": _whole(report.fixed_state_bytes),
        "measured_ttft_ms_at_ctx": data["measured_ttft_ms_at_ctx"],
        "measured_tps_at_ctx": data["measured_tps_at_ctx"],
        **headline_figures(data),
        "publisher": source["publisher"],
        "source_url": source.get("url"),
        "published": source.get("published"),
        "locator": source.get("locator"),
        "confidence": data["confidence"],
        "path": display,
        "dataset_version": DATASET_VERSION,
    }
