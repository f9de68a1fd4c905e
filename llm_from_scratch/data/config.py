"""Schema of the `data` config group (`configs/data/*.yaml`).

The settings are grouped by what they change, so that caches key on whole sections, never on
lists of field names that a new field could be left off:

    corpus    which texts the splits hold (keys the tokenizer files and the tokenized cache)
    cleaning  which training pairs are kept (keys the tokenized cache)
    loading   how the cached splits are batched and read (keys nothing)

The top-level fields say where the raw files come from; the cache keys on the files themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llm_from_scratch.data.source_style import SOURCE_STYLES
from llm_from_scratch.errors import ConfigError, check_choice, check_range
from llm_from_scratch.numbers import DIGIT_FORMS

if TYPE_CHECKING:  # a config is read before torch loads (`--help`)
    import torch

SOURCES = ("urls", "hub", "local", "archive", "derived", "name_dictionary")
# How the raw files are laid out (see `CorpusConfig.splits` for what names a split in each).
FORMATS = ("parallel", "tsv", "jsonl", "hub", "monolingual")
SPLITS = ("train", "dev", "test")
# The column of a mixture's splits naming the corpus each pair comes from; a split of one
# corpus may lack it.
CORPUS_COLUMN = "corpus"
# Special tokens each side of a pair gains in a batch: the source ends with EOS; the target is
# shifted into BOS-prefixed input and EOS-suffixed output, each one token longer than the text.
SPECIALS_PER_SIDE = 1
STATIC_SHAPES_CHOICES = ("auto", "true", "false")


@dataclass
class DataFile:
    """One file of a dataset, as it lies in `<paths.raw_dir>/<dataset>/`."""

    name: str
    url: str | None = None  # None: the file is not downloadable (a local-only or derived dataset)
    bytes: int | None = None  # expected size; checked after every download or copy
    sha256: str | None = None  # expected checksum; checked when given
    sha1: str | None = None  # the checksum some publishers give instead; checked when given


@dataclass
class ExtraPairs:
    """Synthetic training pairs as two files aligned by line, written like the corpus's own."""

    source: str  # e.g. the corpus's train source file
    target: str  # its translations, e.g. the hypotheses.txt of `make eval ARGS="--split train"`


@dataclass
class CorpusConfig:
    """How the raw files are read into train/dev/test pairs of text."""

    # `splits` maps train/dev/test to where each split lies in <paths.raw_dir>/<name>/:
    #   parallel: a file stem, read as `<stem>.<src_lang>` and `<stem>.<tgt_lang>`, aligned by line,
    #             or a name with `{lang}` in it, such as `train.{lang}.gz`;
    #   tsv:      a file of `source<TAB>target` lines, no header;
    #   jsonl:    a file of JSON objects holding `src_column` and `tgt_column`;
    #   hub:      a split of the `save_to_disk` copy, whose columns are `src_column`/`tgt_column`.
    #   monolingual: text in `tgt_lang` only, a file named as parallel's `tgt_lang` side; no
    #             pairs to train on, the input of back-translation (scripts/back_translate.py).
    # A dev or test split left out (null) is carved from train, seeded by `split_seed`; a
    # fraction of 0 leaves that split empty (a corpus whose test set is held back). A corpus
    # only scored on names no train split, but both dev and test.
    # A file name ending in .gz, .xz or .bz2 is read decompressed.
    format: str = "parallel"
    splits: dict[str, str | None] = field(
        default_factory=lambda: {"train": "train", "dev": None, "test": None}
    )
    src_lang: str = "en"
    tgt_lang: str = "ja"
    src_column: str = "en"
    tgt_column: str = "ja"
    split_seed: int = 1234
    dev_fraction: float = 0.01
    test_fraction: float = 0.01
    # jsonl and hub (formats with columns): carve dev and test by this column's value (a
    # document, a dialogue), whole groups at a time, so that no group lies in two splits; null:
    # pair by pair.
    group_column: str | None = None
    # Remove the spaces of pre-segmented Japanese (small_parallel_enja's KyTea tokens), keeping
    # those between two Latin-script words; false keeps the segmentation (word-level BLEU).
    detokenize_ja: bool = False
    # How the source side is written (data/source_style.py): "raw", or "lowercase_tokenized" for
    # corpora like small_parallel_enja. The translator puts user input in the same style.
    source_style: str = "raw"
    # monolingual: a regular expression; lines it matches (`re.search`) are not text of the
    # register, such as a news site's source lines (`毎日新聞、2008年1月24日。`), and are skipped.
    skip_lines: str | None = None

    def __post_init__(self) -> None:
        check_choice("data.corpus.source_style", self.source_style, SOURCE_STYLES)
        check_choice("data.corpus.format", self.format, FORMATS)
        if self.skip_lines is not None:
            try:
                re.compile(self.skip_lines)
            except re.error as error:
                raise ConfigError(
                    f"data.corpus.skip_lines={self.skip_lines!r} is no regular expression: {error}"
                ) from None
        unknown = sorted(set(self.splits) - set(SPLITS))
        if unknown or not (self.has_train or (self.splits.get("dev") and self.splits.get("test"))):
            raise ConfigError(
                f"data.corpus.splits={dict(self.splits)} must name a train split (or, for a "
                f"corpus only scored on, a dev and a test split) and may name only "
                f"{', '.join(SPLITS)}"
            )
        for key in ("dev_fraction", "test_fraction"):
            check_range(f"data.corpus.{key}", getattr(self, key), 0, 1, high_open=True)
        carved = sum(getattr(self, f"{split}_fraction") for split in self.carved_splits)
        if carved >= 1.0:
            raise ConfigError(
                f"data.corpus.dev_fraction + test_fraction = {carved} leaves no training data"
            )

    @property
    def has_train(self) -> bool:
        """Whether the corpus has a train split: one scored on only (the WMT test sets) names
        just its dev and test files."""
        return bool(self.splits.get("train"))

    @property
    def carved_splits(self) -> list[str]:
        """The held-out splits that are cut from train, since no file names them."""
        return [split for split in ("dev", "test") if not self.splits.get(split)]

    @property
    def file_names(self) -> list[str]:
        """The files its splits name in the dataset directory (none for a hub dataset)."""
        if self.format == "hub":
            return []
        named = [location for location in self.splits.values() if location]
        if self.format == "parallel":
            languages = (self.src_lang, self.tgt_lang)
            return [self.side_file(stem, lang) for stem in named for lang in languages]
        if self.format == "monolingual":
            return [self.side_file(stem, self.tgt_lang) for stem in named]
        return named

    @staticmethod
    def side_file(location: str, lang: str) -> str:
        """The file of one language of a parallel split: `train` -> `train.en`,
        `train.{lang}.gz` -> `train.en.gz`."""
        return location.replace("{lang}", lang) if "{lang}" in location else f"{location}.{lang}"


@dataclass
class CleaningConfig:
    """Filters of the train split (held-out splits are never filtered, so scores compare)."""

    max_tokens: int = 128  # per side, before special tokens
    max_length_ratio: float = 3.0  # longer side / shorter side, in tokens

    def __post_init__(self) -> None:
        check_range("data.cleaning.max_tokens", self.max_tokens, 1)
        check_range("data.cleaning.max_length_ratio", self.max_length_ratio, 1)


@dataclass
class LoadingConfig:
    """How tokenized splits become batches: none of it changes what is cached."""

    # `batch_tokens` bounds padded source + padded target tokens (specials included) of a batch;
    # `pool_size` examples are sorted by length together before being cut into batches.
    batch_tokens: int = 4096
    pool_size: int = 65536
    shuffle_seed: int = 1234
    num_workers: int = 0  # DataLoader worker processes
    num_proc: int = 0  # processes for tokenizing and BPE-dropout (`Dataset.map`); 0: one a core
    # BPE-dropout (Provilkov et al., 2020): each epoch re-segments the training pairs, skipping
    # each merge with this probability (0.1 in the paper), a regularizer for small corpora.
    # Before each epoch its segmentation's lengths are measured (in `num_proc` processes), so
    # that batches are planned on what they will hold.
    bpe_dropout: float = 0.0
    # Training batches of at most `max_shapes` fixed (rows, source, target) shapes, lengths
    # rounded up to multiples of `shape_step` (coarser for long ones; data/shapes.py), so a
    # compiled model never meets a new shape. auto: on CUDA only, where the compiled model
    # (and its CUDA graphs) need them; a CPU runs eagerly, as fast per target token either way
    # (scripts/bench_recipe.py), and its recipes were chosen on each batch's own shape.
    static_shapes: str = "auto"
    shape_step: int = 8
    max_shapes: int = 32

    def __post_init__(self) -> None:
        for key in ("batch_tokens", "pool_size", "shape_step", "max_shapes"):
            check_range(f"data.loading.{key}", getattr(self, key), 1)
        for key in ("num_workers", "num_proc"):
            check_range(f"data.loading.{key}", getattr(self, key), 0)
        check_range("data.loading.bpe_dropout", self.bpe_dropout, 0, 1)
        self.static_shapes = str(self.static_shapes).lower()  # `=true` reaches a str as "True"
        check_choice("data.loading.static_shapes", self.static_shapes, STATIC_SHAPES_CHOICES)

    def uses_static_shapes(self, device: torch.device) -> bool:
        """Whether training batches on `device` take static shapes."""
        return self.static_shapes == "true" or (
            self.static_shapes == "auto" and device.type == "cuda"
        )


@dataclass
class CorpusSource:
    """One corpus: where its raw files come from, how they are read, and how its pairs are
    cleaned. A config of `configs/data/` is one, and so is each member of a mixture."""

    name: str = "small_parallel_enja"
    # Where the raw files come from: "urls" (each file's url), "hub" (a Hugging Face dataset id,
    # saved with `save_to_disk`), "archive" (a tar archive, extracted where it is fetched), or
    # "local" (nothing to download: the files must be in the mirror), "derived" (written by a
    # program of this project, e.g. back-translations by scripts/back_translate.py), or
    # "name_dictionary" (written from the installed name dictionary: data/name_pairs.py).
    source: str = "urls"
    files: list[DataFile] = field(default_factory=list)
    archive: DataFile | None = None  # source=archive: the archive; `corpus.splits` name its files
    hub_id: str | None = None
    hub_config: str | None = None
    # Copy `<mirror>/<name>/` instead of downloading; unset: the DATA_MIRROR environment variable.
    mirror: str | None = None
    # Which way the model translates, `<source>-<target>` in the corpus's two languages, e.g.
    # ja-en; None: as the corpus is written, src_lang to tgt_lang (en-ja for every shipped one).
    # The reverse swaps each pair after reading, so files and `corpus` settings stay as written.
    direction: str | None = None
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    cleaning: CleaningConfig = field(default_factory=CleaningConfig)

    def check_source(self, key: str = "data") -> None:
        """Refuse a source that lacks what fetching it needs; `key` names this corpus's node."""
        check_choice(f"{key}.source", self.source, SOURCES)
        if self.source == "hub" and not self.hub_id:
            raise ConfigError(f"{key}.source=hub needs {key}.hub_id (dataset {self.name!r})")
        if self.source == "hub" and self.corpus.format != "hub":
            raise ConfigError(
                f"{key}.source=hub needs {key}.corpus.format=hub, got {self.corpus.format!r}"
            )
        if self.source == "urls":
            missing = [f.name for f in self.files if not f.url]
            if not self.files or missing:
                raise ConfigError(
                    f"{key}.source=urls needs a url for every file of {self.name!r}; "
                    f"missing for: {', '.join(missing) or f'{key}.files is empty'}"
                )
        if self.source == "archive" and (self.archive is None or not self.archive.url):
            raise ConfigError(
                f"{key}.source=archive needs {key}.archive with a name and a url ({self.name!r})"
            )


@dataclass
class MixtureMember(CorpusSource):
    """A corpus of a mixture (`data.mixture.<name>`), composed from its `configs/data/` file."""

    name: str = ""  # set by the corpus's config file, which the mixture's defaults list names
    # How many times each of its train pairs (deduplicated, cleaned) is sampled: 1 once, 2 twice,
    # 0.5 a seeded half; 0 none: only its dev and test are read, and scored (a fine-tuned
    # model's parent corpora, to watch forgetting). Unused when the mixture sets a temperature.
    weight: float = 1.0


@dataclass
class DataConfig(CorpusSource):
    """The `data` group: one corpus, or a mixture of several (`mixture`)."""

    # Pairs appended to the train split only (after dev/test are carved): forward translations
    # by a teacher for sequence-level distillation, or back-translations. The tokenizers are
    # trained on the corpus alone, so such a run shares them with the corpus's run.
    extra_train: list[ExtraPairs] = field(default_factory=list)
    loading: LoadingConfig = field(default_factory=LoadingConfig)
    # Several corpora in one run (docs/data.md, Several corpora), each composed from its
    # `configs/data/` file by the defaults list, keyed by its name. Empty: the corpus above.
    # A mixture reads no files of its own: of `corpus` it uses src_lang, tgt_lang and
    # source_style (the model's: each member is converted into it); `cleaning` applies to every
    # train pair, each member's own cleaning to its pairs as well.
    mixture: dict[str, MixtureMember] = field(default_factory=dict)
    # Instead of the weights: corpus i gets a share of the train pairs proportional to
    # n_i ** (1 / temperature), n_i its pairs after deduplication and cleaning; the total stays.
    temperature: float | None = None
    mixture_seed: int = 1234  # draws the fractional parts of resampling
    # The member whose dev BLEU picks best.pt and counts for early stopping (training.patience),
    # the others scored beside it: a fine-tuning run's domain, its parent's corpora alongside.
    # null: all of dev.
    dev_corpus: str | None = None
    # The numbers a train pair's two sides share become placeholders the model copies, and the
    # translator writes them back (data/placeholders.py). Dev and test stay as written.
    number_placeholders: bool = False
    # Likewise the names they share, in half of the train pairs; the translator masks the names
    # the model rarely saw and copies them into its output (data/names.py).
    name_placeholders: bool = False
    # How the translator writes a copied number (a placeholder) back in Japanese: `full_width`
    # (１，２００), as the everyday corpora's references write numbers, or `ascii` (1,200), as
    # news, Wikipedia, lectures and documentation do. A mixture's is its own key, the form most
    # of its weighted train targets use. `decoding.number_digits` replaces it.
    number_digits: str = "full_width"
    # A train pair of several sentences, as many on each side, also gives each of its sentence
    # pairs as a pair of its own: the translator translates a line sentence by sentence, and a
    # greeting (`Hello.`) is seldom a line of its own in a corpus. Dev and test stay as written.
    sentence_pairs: bool = False

    def __post_init__(self) -> None:
        check_choice("data.number_digits", self.number_digits, DIGIT_FORMS)
        if self.mixture:
            self._check_mixture()
        else:
            self.check_source()
            if self.dev_corpus is not None:
                raise ConfigError(
                    f"data.dev_corpus={self.dev_corpus!r} picks a corpus of a mixture; "
                    f"{self.name} is one corpus"
                )
        self.check_batch_tokens(self.loading.batch_tokens, "data.loading.batch_tokens")
        forward = f"{self.corpus.src_lang}-{self.corpus.tgt_lang}"
        backward = f"{self.corpus.tgt_lang}-{self.corpus.src_lang}"
        if self.direction not in (None, forward, backward):
            raise ConfigError(
                f"data.direction={self.direction!r} must be {forward} or {backward}: the "
                "corpus's languages (data.corpus.src_lang, data.corpus.tgt_lang)"
            )

    @property
    def reversed(self) -> bool:
        """Whether the model translates the corpus backwards (tgt_lang to src_lang): each pair
        is swapped after reading, extra_train's too (its files are written like the corpus's)."""
        return self.direction == f"{self.corpus.tgt_lang}-{self.corpus.src_lang}"

    @property
    def source_lang(self) -> str:
        """The language the model reads (`corpus.src_lang` names a file side, not this)."""
        return self.corpus.tgt_lang if self.reversed else self.corpus.src_lang

    @property
    def target_lang(self) -> str:
        """The language the model writes: what BLEU's tokenizer and the joiner follow."""
        return self.corpus.src_lang if self.reversed else self.corpus.tgt_lang

    @property
    def input_style(self) -> str:
        """The style user input is put in: `corpus.source_style` describes the corpus's src_lang
        side, which a reversed model writes rather than reads, so its input stays raw."""
        return "raw" if self.reversed else self.corpus.source_style

    def _check_mixture(self) -> None:
        check_choice("data.source", self.source, SOURCES)
        if self.temperature is not None:
            check_range("data.temperature", self.temperature, 0, low_open=True)
        if self.extra_train:
            raise ConfigError("data.extra_train is for one corpus; a mixture cannot take it yet")
        languages = (self.corpus.src_lang, self.corpus.tgt_lang)
        for key, member in self.mixture.items():
            node = f"data.mixture.{key}"
            if not member.name:
                raise ConfigError(
                    f"{node} names no corpus: compose it from its config in the mixture's "
                    f"defaults list (- /data/<corpus>@mixture.{key})"
                )
            if member.name != key:
                raise ConfigError(f"{node} holds the corpus {member.name!r}: key it by that name")
            member.check_source(node)
            if member.corpus.format == "monolingual":
                raise ConfigError(
                    f"{node} is monolingual ({member.corpus.tgt_lang} only): a mixture trains "
                    "on pairs; back-translate it (scripts/back_translate.py) and mix the "
                    "synthetic corpus instead"
                )
            check_range(f"{node}.weight", member.weight, 0)
            if self.temperature is not None and member.weight != 1.0:
                raise ConfigError(
                    f"{node}.weight={member.weight} and data.temperature={self.temperature}: "
                    "give a mixture weights or a temperature, not both"
                )
            if not member.corpus.has_train and (member.weight or self.temperature is not None):
                raise ConfigError(
                    f"{node} has no train split (dev and test only): give it weight 0, and the "
                    "mixture weights rather than a temperature, so that only its dev and test "
                    "are read"
                )
            member_languages = (member.corpus.src_lang, member.corpus.tgt_lang)
            if member_languages != languages:
                raise ConfigError(
                    f"{node} translates {'-'.join(member_languages)}, the mixture "
                    f"{'-'.join(languages)}: set data.corpus.src_lang and tgt_lang alike"
                )
        if self.dev_corpus is not None and self.dev_corpus not in self.mixture:
            raise ConfigError(
                f"data.dev_corpus={self.dev_corpus!r} is not a corpus of the mixture "
                f"({', '.join(self.mixture)})"
            )
        if self.temperature is None and not any(m.weight for m in self.mixture.values()):
            raise ConfigError("data.mixture: every weight is 0, which leaves no train pairs")

    @property
    def members(self) -> list[CorpusSource]:
        """The corpora read: the mixture's members, or this config's own corpus."""
        return list(self.mixture.values()) if self.mixture else [self]

    def check_batch_tokens(self, batch_tokens: int, key: str) -> None:
        """Refuse a batch budget that cannot hold the longest pair cleaning keeps."""
        longest_pair = 2 * (self.cleaning.max_tokens + SPECIALS_PER_SIDE)
        if batch_tokens < longest_pair:
            raise ConfigError(
                f"{key}={batch_tokens} cannot hold one pair of "
                f"data.cleaning.max_tokens={self.cleaning.max_tokens} tokens per side "
                f"(needs {longest_pair})"
            )
