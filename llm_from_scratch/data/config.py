"""Schema of the `data` config group (`configs/data/*.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_from_scratch.data.source_style import SOURCE_STYLES
from llm_from_scratch.errors import ConfigError

SOURCES = ("urls", "hub", "local")
# How the raw files are laid out (see `DataConfig.splits` for what names a split in each).
FORMATS = ("parallel", "tsv", "jsonl", "hub")
SPLITS = ("train", "dev", "test")
# Special tokens each side of a pair gains in a batch: the source ends with EOS; the target is
# shifted into BOS-prefixed input and EOS-suffixed output, each one token longer than the text.
SPECIALS_PER_SIDE = 1


@dataclass
class DataFile:
    """One file of a dataset, as it lies in `data/raw/<dataset>/`."""

    name: str
    url: str | None = None  # None: the file is not downloadable (a local-only or derived dataset)
    bytes: int | None = None  # expected size; checked after every download or copy
    sha256: str | None = None  # expected checksum; checked when given


@dataclass
class ExtraPairs:
    """Synthetic training pairs as two files aligned by line, written like the corpus's own."""

    source: str  # e.g. the corpus's train source file
    target: str  # its translations, e.g. the hypotheses.txt of `make eval ARGS="split=train"`


def _default_splits() -> dict[str, str]:
    return {"train": "train", "dev": "dev", "test": "test"}


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

    # Reading. `splits` maps train/dev/test to where each split lies in data/raw/<name>/:
    #   parallel: a file stem, read as `<stem>.<src_lang>` and `<stem>.<tgt_lang>`, aligned by line;
    #   tsv:      a file of `source<TAB>target` lines, no header;
    #   jsonl:    a file of JSON objects holding `src_column` and `tgt_column`;
    #   hub:      a split of the `save_to_disk` copy, whose columns are `src_column`/`tgt_column`.
    # A dev or test split left out is carved from train, seeded by `split_seed`.
    format: str = "parallel"
    splits: dict[str, str] = field(default_factory=_default_splits)
    src_column: str = "en"
    tgt_column: str = "ja"
    split_seed: int = 1234
    dev_fraction: float = 0.01
    test_fraction: float = 0.01
    # Pairs appended to the train split only (after dev/test are carved): forward translations
    # by a teacher for sequence-level distillation, or back-translations. The tokenizers are
    # trained on the corpus alone, so such a run shares them with the corpus's run.
    extra_train: list[ExtraPairs] = field(default_factory=list)
    # Remove the spaces of pre-segmented Japanese (small_parallel_enja's KyTea tokens), keeping
    # those between two Latin-script words; false keeps the segmentation (word-level BLEU).
    detokenize_ja: bool = False
    # How the source side is written (data/source_style.py): "raw", or "lowercase_tokenized" for
    # corpora like small_parallel_enja. The translator puts user input in the same style.
    source_style: str = "raw"

    # Cleaning of the train split (held-out splits are never filtered, so scores stay comparable).
    max_tokens: int = 128  # per side, before special tokens
    max_length_ratio: float = 3.0  # longer side / shorter side, in tokens

    # Tokenization, cached under `cache_dir`; `num_proc` processes for `Dataset.map`.
    cache_dir: str = "data/cache"
    num_proc: int = 1

    # Batching: `batch_tokens` bounds padded source + padded target tokens (specials included) of
    # a batch; `pool_size` examples are sorted by length together before being cut into batches.
    batch_tokens: int = 4096
    pool_size: int = 65536
    shuffle_seed: int = 1234
    num_workers: int = 0  # DataLoader worker processes
    # BPE-dropout (Provilkov et al., 2020): each epoch re-segments the training pairs, skipping
    # each merge with this probability (0.1 in the paper), a regularizer for small corpora.
    # Batches are planned on the cached lengths, so they grow: padded tokens per batch +60% at 0.1
    # on small_parallel_enja (the longest sample of a batch sets its width).
    bpe_dropout: float = 0.0

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
        self._check_reading()
        self._check_sizes()

    def _check_reading(self) -> None:
        if self.source_style not in SOURCE_STYLES:
            raise ConfigError(
                f"data.source_style={self.source_style!r} must be one of {', '.join(SOURCE_STYLES)}"
            )
        if self.format not in FORMATS:
            raise ConfigError(f"data.format={self.format!r} must be one of {', '.join(FORMATS)}")
        if self.source == "hub" and self.format != "hub":
            raise ConfigError(f"data.source=hub needs data.format=hub, got {self.format!r}")
        unknown = sorted(set(self.splits) - set(SPLITS))
        if unknown or "train" not in self.splits:
            raise ConfigError(
                f"data.splits={dict(self.splits)} must name a train split and may name only "
                f"{', '.join(SPLITS)}"
            )
        for key in ("dev_fraction", "test_fraction"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise ConfigError(f"data.{key}={getattr(self, key)} must be in [0, 1)")
        carved_splits = [split for split in ("dev", "test") if split not in self.splits]
        carved = sum(getattr(self, f"{split}_fraction") for split in carved_splits)
        if carved >= 1.0:
            raise ConfigError(
                f"data.dev_fraction + data.test_fraction = {carved} leaves no training data"
            )

    def _check_sizes(self) -> None:
        for key in ("max_tokens", "pool_size", "num_proc"):
            if getattr(self, key) < 1:
                raise ConfigError(f"data.{key}={getattr(self, key)} must be at least 1")
        if self.num_workers < 0:
            raise ConfigError(f"data.num_workers={self.num_workers} must not be negative")
        if not 0.0 <= self.bpe_dropout <= 1.0:
            raise ConfigError(f"data.bpe_dropout={self.bpe_dropout} must be in [0, 1]")
        if self.max_length_ratio < 1.0:
            raise ConfigError(f"data.max_length_ratio={self.max_length_ratio} must be at least 1")
        longest_pair = 2 * (self.max_tokens + SPECIALS_PER_SIDE)
        if self.batch_tokens < longest_pair:
            raise ConfigError(
                f"data.batch_tokens={self.batch_tokens} cannot hold one pair of "
                f"data.max_tokens={self.max_tokens} tokens per side (needs {longest_pair})"
            )
