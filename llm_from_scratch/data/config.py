"""Schema of the `data` config group (`configs/data/*.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_from_scratch.errors import ConfigError

SOURCES = ("urls", "hub", "local")


@dataclass
class DataFile:
    """One file of a dataset, as it lies in `data/raw/<dataset>/`."""

    name: str
    url: str | None = None  # None: the file is not downloadable (a local-only or derived dataset)
    bytes: int | None = None  # expected size; checked after every download or copy
    sha256: str | None = None  # expected checksum; checked when given


@dataclass
class DataConfig:
    name: str = "small_parallel_enja"
    # Where the raw files come from: "urls" (each file's url), "hub" (a Hugging Face dataset id,
    # saved with `save_to_disk`), or "local" (nothing to download: the files must be in the mirror).
    source: str = "urls"
    files: list[DataFile] = field(default_factory=list)
    hub_id: str | None = None
    hub_config: str | None = None
    # Copy `<mirror>/<name>/` instead of downloading; unset: the DATA_MIRROR environment variable.
    mirror: str | None = None
    raw_dir: str = "data/raw"
    src_lang: str = "en"
    tgt_lang: str = "ja"

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ConfigError(f"data.source={self.source!r} must be one of {', '.join(SOURCES)}")
        if self.source == "hub" and not self.hub_id:
            raise ConfigError(f"data.source=hub needs data.hub_id (dataset {self.name!r})")
        if self.source == "urls":
            missing = [f.name for f in self.files if not f.url]
            if not self.files or missing:
                raise ConfigError(
                    f"data.source=urls needs a url for every file of {self.name!r}; "
                    f"missing for: {', '.join(missing) or 'data.files is empty'}"
                )
