"""Which evaluation a result is: the settings that change its scores, and the name of the folder
that keeps it.

Each evaluation beside a model keeps its own folder (`RunDir.evaluation`), named by what changes
its scores: the corpus (when not the run's own), the split, the engine or ensemble, the checkpoint
(when not the run's final model), the beam, `--limit`, and a hash of any other decoding key set
apart from the run's own. So `--beam 1` or `--limit 20` after a full beam-5 run writes beside it,
never over it; `metrics.json` records the same settings in full (`settings`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HASH_CHARS = 8  # of the hash of the other decoding keys, in a folder's name


@dataclass(frozen=True)
class EvaluationSettings:
    """What an evaluation's scores depend on besides the model's weights."""

    split: str
    dataset: str | None  # None: the run's own data
    variant: str | None  # "ensemble", "ctranslate2", or None (one torch checkpoint)
    checkpoint: str | None  # the checkpoint's stem when not the run's final model, else None
    beam: int
    limit: int | None  # None: the whole split
    other_decoding: dict[str, Any]  # the decoding keys (beam aside) unlike the run's own

    def folder_name(self) -> str:
        """`test-beam5`, `wmt_news-test-beam5`, `test-ensemble-beam1-limit20-1a2b3c4d`, ...: the
        name `RunDir.evaluation` takes."""
        parts = [self.dataset, self.split, self.variant, self.checkpoint, f"beam{self.beam}"]
        if self.limit is not None:
            parts.append(f"limit{self.limit}")
        if self.other_decoding:
            parts.append(settings_hash(self.other_decoding))
        return "-".join(part for part in parts if part)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def other_decoding(decoding: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """The keys of `decoding` (the search an evaluation ran) set unlike `own` (its run's), the
    beam aside: the beam has its own part of a folder's name."""
    return {
        key: value
        for key, value in sorted(decoding.items())
        if key != "beam_size" and own.get(key) != value
    }


def settings_hash(settings: dict[str, Any]) -> str:
    """A short, stable hash of `settings`: the same keys and values, the same hash."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def recorded_settings(directory: Path) -> dict[str, Any] | None:
    """The settings the `metrics.json` in `directory` records; None without one (or one from
    before settings were recorded)."""
    path = directory / "metrics.json"
    try:
        metrics = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    settings = metrics.get("settings") if isinstance(metrics, dict) else None
    return settings if isinstance(settings, dict) else None
