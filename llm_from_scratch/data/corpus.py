"""Read a split of a parallel corpus into a `datasets.Dataset` of raw `src`/`tgt` text.

Every format goes through `datasets`, so large corpora are memory-mapped Arrow tables rather than
Python lists. Alignment is checked, never assumed: parallel files of different lengths and TSV
lines without exactly one tab are errors, because a shifted corpus trains silently but badly.
So are empty files and text that is not UTF-8, named with the file and the line. Files ending in
.gz, .xz or .bz2 are read decompressed (`datasets` decompresses by extension; the checks here
open them with the matching standard-library module).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
from collections.abc import Callable
from functools import partial
from itertools import chain
from pathlib import Path
from typing import IO

import datasets
import numpy as np
import pyarrow.compute as pc
from datasets.exceptions import DatasetGenerationError

from llm_from_scratch.atomic import is_disk_full
from llm_from_scratch.data.config import (
    CORPUS_COLUMN,
    SPLITS,
    CorpusSource,
    DataConfig,
    MixtureMember,
)
from llm_from_scratch.data.mixture import combine
from llm_from_scratch.data.names import mask_pair as mask_names
from llm_from_scratch.data.names import name_lexicon
from llm_from_scratch.data.placeholders import mask_pair
from llm_from_scratch.data.sentences import split_sentences
from llm_from_scratch.data.source_style import prepare_source
from llm_from_scratch.data.sources import dataset_dir
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.text_input import FILE_ENCODING
from llm_from_scratch.word_segmentation import detokenize_ja

# The compressed formats read by file extension, with the module that opens each.
_OPENERS: dict[str, Callable[..., IO[bytes]]] = {
    ".gz": gzip.open,
    ".xz": lzma.open,
    ".bz2": bz2.open,
}
# What they raise for a damaged file: gzip.BadGzipFile and bz2's errors are OSErrors, a
# truncated stream an EOFError.
_DECOMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError)


# The column a grouped corpus's pairs carry until dev and test are carved (`_carve`).
GROUP = "group"


class CorpusError(UserError):
    """A corpus file is missing, malformed, or misaligned with its other side."""


def corpus_labels(pairs: datasets.Dataset, name: str) -> list[str]:
    """The corpus of each pair of a split: its `corpus` column, else `name` for every pair."""
    if CORPUS_COLUMN in pairs.column_names:
        return list(pairs[CORPUS_COLUMN])
    return [name] * len(pairs)


def load_split(cfg: DataConfig, split: str, paths: PathsConfig) -> datasets.Dataset:
    """The `split` (train, dev or test) of `cfg` with string columns `src` and `tgt`; of a
    mixture, also `corpus` (data/mixture.py), train deduplicated and cleared of held-out overlap."""
    return load_splits(cfg, paths, (split,))[0][split]


def load_splits(
    cfg: DataConfig, paths: PathsConfig, splits: tuple[str, ...] = SPLITS
) -> tuple[dict[str, datasets.Dataset], dict[str, int]]:
    """The `splits` of `cfg` and, for a mixture, how many train pairs it removed for each reason
    (`duplicate`, `held_out_overlap`)."""
    for split in splits:
        if split not in SPLITS:
            raise CorpusError(f"unknown split {split!r}: expected train, dev or test")

    def read_one(member: CorpusSource, split: str) -> datasets.Dataset:
        pairs = read_split(member, split, paths)
        # Before the mixture's deduplication, which then covers the sentence pairs too.
        return _with_sentence_pairs(pairs) if cfg.sentence_pairs and split == "train" else pairs

    if cfg.mixture:
        read, removed = combine(cfg, splits, read_one)
    else:
        read, removed = {split: read_one(cfg, split) for split in splits}, {}
    pairs = {split: _in_direction(cfg, split_pairs) for split, split_pairs in read.items()}
    if "train" in pairs:  # dev and test are scored on the text as written
        pairs["train"] = _with_placeholders(cfg, pairs["train"])
    return pairs, removed


def read_split(cfg: CorpusSource, split: str, paths: PathsConfig) -> datasets.Dataset:
    """The `split` of one corpus, in its own source style."""
    group = cfg.corpus.group_column
    if group is not None and cfg.corpus.format not in ("jsonl", "hub"):
        raise CorpusError(
            f"data.corpus.group_column={group!r} needs a format with columns (jsonl or hub), "
            f"not {cfg.corpus.format!r}"
        )
    if split == "train" and not cfg.corpus.has_train:
        if not isinstance(cfg, MixtureMember):
            raise CorpusError(
                f"{cfg.name} has no train split (dev and test only): score a model on it "
                f'(make eval ARGS="--data {cfg.name}"), or read it in a mixture at weight 0'
            )
        # A mixture's member at weight 0 (the config checks): its dev and test are what count.
        text = datasets.Value("string")
        return datasets.Dataset.from_dict(
            {"src": [], "tgt": []}, features=datasets.Features(src=text, tgt=text)
        )
    if split not in cfg.corpus.carved_splits and split != "train":
        pairs = _read(cfg, paths, cfg.corpus.splits[split])
        if cfg.corpus.group_column:
            pairs = pairs.remove_columns([GROUP])
    else:
        pairs = _carve(cfg, _read(cfg, paths, cfg.corpus.splits["train"]), split)
    if len(pairs) == 0 and not _is_held_back(cfg, split):
        raise CorpusError(_empty_split(cfg, split))
    return _in_corpus_style(cfg, pairs)


def _is_held_back(cfg: CorpusSource, split: str) -> bool:
    """Whether `split` is carved with a fraction of 0: empty on purpose (a held-back test set)."""
    return split in cfg.corpus.carved_splits and getattr(cfg.corpus, f"{split}_fraction") == 0


def _empty_split(cfg: CorpusSource, split: str) -> str:
    message = f"the {split} split of {cfg.name} has no pairs"
    if split in cfg.corpus.carved_splits:
        fraction = getattr(cfg.corpus, f"{split}_fraction")
        return (
            f"{message}: data.corpus.{split}_fraction={fraction} of its train file is none; "
            f"raise it, or name a {split} file in data.corpus.splits"
        )
    return message


def load_extra_train(cfg: DataConfig, paths: PathsConfig) -> datasets.Dataset | None:
    """The pairs of `cfg.extra_train`, read and styled like the corpus; None when there are none."""
    if not cfg.extra_train:
        return None
    parts = []
    for extra in cfg.extra_train:
        files = Path(extra.source), Path(extra.target)
        for path in files:
            if not path.is_file():
                raise CorpusError(
                    f"{path} not found: data.extra_train names it; write it first (the README's "
                    "Data section, Synthetic pairs) or fix the path"
                )
        parts.append(_read_aligned(paths, *files))
    pairs = _in_corpus_style(cfg, datasets.concatenate_datasets(parts))
    return _with_placeholders(cfg, _in_direction(cfg, pairs))


def _with_sentence_pairs(pairs: datasets.Dataset) -> datasets.Dataset:
    """`pairs` followed by the sentence pairs of each pair whose two sides split into as many
    sentences, more than one (`data.sentence_pairs`)."""

    def sentence_pairs(batch: dict[str, list[str]]) -> dict[str, list[str]]:
        sources, targets = [], []
        for source, target in zip(batch["src"], batch["tgt"], strict=True):
            in_source, in_target = split_sentences(source), split_sentences(target)
            if len(in_source) > 1 and len(in_source) == len(in_target):
                sources += in_source
                targets += in_target
        return {"src": sources, "tgt": targets}

    pairs = pairs.select_columns(["src", "tgt"])
    added = pairs.map(sentence_pairs, batched=True, desc="sentence pairs")
    return datasets.concatenate_datasets([pairs, added])


def _with_placeholders(cfg: DataConfig, pairs: datasets.Dataset) -> datasets.Dataset:
    """Train `pairs` with the numbers both sides share masked, where `data.number_placeholders`
    asks for it (data/placeholders.py), and the names, where `data.name_placeholders` does
    (data/names.py)."""
    if cfg.number_placeholders:
        pairs = _masked(pairs, mask_pair, "number placeholders")
    if cfg.name_placeholders:
        batches = pairs.select_columns(["src", "tgt"]).iter(batch_size=10_000)
        lexicon = name_lexicon(
            chain.from_iterable(zip(b["src"], b["tgt"], strict=True) for b in batches)
        )
        pairs = _masked(pairs, partial(mask_names, lexicon=lexicon), "name placeholders")
    return pairs


def _masked(
    pairs: datasets.Dataset, mask: Callable[[str, str], tuple[str, str]], desc: str
) -> datasets.Dataset:
    def mask_batch(batch: dict[str, list[str]]) -> dict[str, list[str]]:
        masked = [mask(src, tgt) for src, tgt in zip(batch["src"], batch["tgt"], strict=True)]
        return {"src": [src for src, _ in masked], "tgt": [tgt for _, tgt in masked]}

    return pairs.map(mask_batch, batched=True, desc=desc)


def _in_corpus_style(cfg: CorpusSource, pairs: datasets.Dataset) -> datasets.Dataset:
    if cfg.corpus.detokenize_ja:
        pairs = _detokenize(cfg, pairs)
    if cfg.corpus.source_style != "raw":
        pairs = pairs.map(
            lambda batch: {
                "src": [prepare_source(t, cfg.corpus.source_style) for t in batch["src"]]
            },
            batched=True,
            desc=f"source style {cfg.corpus.source_style}",
        )
    return pairs


def _in_direction(cfg: DataConfig, pairs: datasets.Dataset) -> datasets.Dataset:
    """`pairs` as the model translates them: swapped when `data.direction` reverses the
    corpus (a rename of the Arrow columns, no copy)."""
    if not cfg.reversed:
        return pairs
    others = [name for name in pairs.column_names if name not in ("src", "tgt")]  # `corpus`
    return pairs.rename_columns({"src": "tgt", "tgt": "src"}).select_columns(
        ["src", "tgt", *others]
    )


def _carve(cfg: CorpusSource, pairs: datasets.Dataset, split: str) -> datasets.Dataset:
    """`split` of a seeded partition of `pairs` (the train file), dev and test carved first;
    by `corpus.group_column`, whole groups at a time. The group column is dropped."""
    carved, group_column = cfg.corpus.carved_splits, cfg.corpus.group_column
    if not carved:
        return pairs.remove_columns([GROUP]) if group_column else pairs
    rng = np.random.default_rng(cfg.corpus.split_seed)
    if group_column:
        rows = _group_order(pairs[GROUP], rng)
        pairs = pairs.remove_columns([GROUP])
    else:
        rows = [[int(index)] for index in rng.permutation(len(pairs))]
    chosen: dict[str, list[int]] = {name: [] for name in ("dev", "test", "train")}
    for name in carved:
        target = round(len(pairs) * getattr(cfg.corpus, f"{name}_fraction"))
        left = []
        for group in rows:  # in order, each group whose whole brings the split nearer its size
            if abs(len(chosen[name]) + len(group) - target) < abs(len(chosen[name]) - target):
                chosen[name] += group
            else:
                left.append(group)
        rows = left
    chosen["train"] = [index for group in rows for index in group]
    return pairs.select(np.sort(np.array(chosen[split], dtype=np.int64)))


def _group_order(groups: list, rng: np.random.Generator) -> list[list[int]]:
    """The rows of each group (in the order groups first appear), the groups shuffled by `rng`."""
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(str(group), []).append(index)
    order = list(members.values())
    return [order[int(index)] for index in rng.permutation(len(order))]


def read_monolingual(cfg: CorpusSource, paths: PathsConfig) -> list[str]:
    """The sentences of a monolingual corpus's train file (`data.corpus.format=monolingual`), in
    order, without blank lines and those `data.corpus.skip_lines` matches."""
    if cfg.corpus.format != "monolingual":
        raise CorpusError(
            f"{cfg.name} is {cfg.corpus.format}, not monolingual: give a corpus of text in one "
            "language (data.corpus.format=monolingual)"
        )
    location = cfg.corpus.side_file(cfg.corpus.splits["train"], cfg.corpus.tgt_lang)
    lines = _load_lines(paths, _existing(dataset_dir(cfg, paths) / location))["text"]
    skip = re.compile(cfg.corpus.skip_lines) if cfg.corpus.skip_lines else None
    return [line for line in lines if line.strip() and not (skip and skip.search(line))]


def _read(cfg: CorpusSource, paths: PathsConfig, location: str) -> datasets.Dataset:
    if cfg.corpus.format == "monolingual":
        raise CorpusError(
            f"{cfg.name} is monolingual ({cfg.corpus.tgt_lang} only): there are no pairs to "
            f"train on or score; back-translate it into a corpus that has "
            f'(make back-translate ARGS="--run RUN --data {cfg.name}")'
        )
    root = dataset_dir(cfg, paths)
    readers = {"parallel": _read_parallel, "tsv": _read_tsv, "jsonl": _read_jsonl, "hub": _read_hub}
    return readers[cfg.corpus.format](cfg, paths, root, location)


def _read_parallel(
    cfg: CorpusSource, paths: PathsConfig, root: Path, stem: str
) -> datasets.Dataset:
    src_path = _existing(root / cfg.corpus.side_file(stem, cfg.corpus.src_lang))
    tgt_path = _existing(root / cfg.corpus.side_file(stem, cfg.corpus.tgt_lang))
    return _read_aligned(paths, src_path, tgt_path)


def _read_aligned(paths: PathsConfig, src_path: Path, tgt_path: Path) -> datasets.Dataset:
    """Pairs from two files aligned by line, which must have as many lines as each other."""
    src = _load_lines(paths, src_path)
    tgt = _load_lines(paths, tgt_path)
    if len(src) != len(tgt):
        raise CorpusError(
            f"misaligned parallel files: {src_path} has {len(src)} lines but {tgt_path} has "
            f"{len(tgt)}; they must have one sentence per line, line i of one translating line "
            "i of the other"
        )
    # Side by side as Arrow columns: no Python copy of either side.
    return datasets.concatenate_datasets(
        [src.rename_column("text", "src"), tgt.rename_column("text", "tgt")], axis=1
    )


def _read_tsv(cfg: CorpusSource, paths: PathsConfig, root: Path, name: str) -> datasets.Dataset:
    # Read as plain lines and split here rather than with the CSV reader: quotes are ordinary
    # characters in sentences, and a line with a stray tab must be reported, not re-parsed.
    path = _existing(root / name)
    lines = _load_lines(paths, path)
    # A blank line is an empty pair (dropped and counted by cleaning); anything else needs a tab.
    text = lines.data.column("text")
    tabs = pc.count_substring(text, "\t")
    bad = np.flatnonzero(pc.and_(pc.greater(pc.utf8_length(text), 0), pc.not_equal(tabs, 1)))
    if len(bad):
        raise CorpusError(
            f"{path}: {len(bad)} line(s) do not have exactly one tab between source and target, "
            f"first at line {bad[0] + 1}: {lines[int(bad[0])]['text'][:80]!r}"
        )
    return lines.map(
        lambda batch: _split_tab(batch["text"]),
        batched=True,
        remove_columns=["text"],
        desc=f"splitting {path.name}",
    )


def _split_tab(lines: list[str]) -> dict[str, list[str]]:
    pairs = [line.split("\t") if line else ("", "") for line in lines]
    return {"src": [src for src, _ in pairs], "tgt": [tgt for _, tgt in pairs]}


def _read_jsonl(cfg: CorpusSource, paths: PathsConfig, root: Path, name: str) -> datasets.Dataset:
    path = _existing(root / name)
    return _select_columns(_load_file("json", path, paths), cfg, str(path))


def _read_hub(cfg: CorpusSource, paths: PathsConfig, root: Path, split: str) -> datasets.Dataset:
    if not root.is_dir():
        raise CorpusError(f"{root} not found: fetch the dataset first (make data)")
    saved = datasets.load_from_disk(str(root))
    if isinstance(saved, datasets.DatasetDict):
        if split not in saved:
            raise CorpusError(
                f"{root} has no split {split!r} (it has {', '.join(saved)}); set data.corpus.splits"
            )
        saved = saved[split]
    elif split != cfg.corpus.splits["train"]:
        raise CorpusError(f"{root} holds a single dataset, not a split {split!r}")
    return _select_columns(saved, cfg, str(root))


def _select_columns(table: datasets.Dataset, cfg: CorpusSource, origin: str) -> datasets.Dataset:
    group = cfg.corpus.group_column
    wanted = [cfg.corpus.src_column, cfg.corpus.tgt_column, *([group] if group else [])]
    missing = [c for c in wanted if c not in table.column_names]
    if missing:
        raise CorpusError(
            f"{origin} has no column {', '.join(map(repr, missing))} (it has "
            f"{', '.join(table.column_names)}); set data.corpus.src_column and "
            "data.corpus.tgt_column" + (" (and data.corpus.group_column)" if group else "")
        )
    table = table.select_columns(wanted)
    names = {cfg.corpus.src_column: "src", cfg.corpus.tgt_column: "tgt"}
    table = table.rename_columns({**names, **({group: GROUP} if group else {})})
    string = datasets.Value("string")
    # Missing values (JSON null) become empty strings, which cleaning drops and counts.
    return table.map(
        lambda batch: {key: [text or "" for text in batch[key]] for key in ("src", "tgt")},
        batched=True,
        desc="reading columns",
    ).cast(datasets.Features({"src": string, "tgt": string, **({GROUP: string} if group else {})}))


def _detokenize(cfg: CorpusSource, pairs: datasets.Dataset) -> datasets.Dataset:
    sides = [
        side
        for side, lang in (("src", cfg.corpus.src_lang), ("tgt", cfg.corpus.tgt_lang))
        if lang == "ja"
    ]
    if not sides:
        return pairs
    return pairs.map(
        lambda batch: {side: [detokenize_ja(text) for text in batch[side]] for side in sides},
        batched=True,
        desc="detokenizing Japanese",
    )


def _load_lines(paths: PathsConfig, path: Path) -> datasets.Dataset:
    return _load_file("text", path, paths)


def _load_file(builder: str, path: Path, paths: PathsConfig) -> datasets.Dataset:
    """One file through `datasets`' `builder` ("text", "json"), its faults as one line."""
    if _is_empty(path):
        raise CorpusError(f"{path} is empty: every file of a corpus needs sentence pairs")
    if builder == "json":  # pyarrow's JSON reader lets bad UTF-8 through, to fail far from here
        _check_utf8(path)
    try:
        return datasets.load_dataset(
            builder,
            data_files=str(path),
            split="train",
            cache_dir=_hf_cache(paths),
            encoding=FILE_ENCODING,  # a byte-order mark is no part of the first line
        )
    except DatasetGenerationError as error:
        if is_disk_full(error):  # writing datasets' cache, not reading `path`
            raise
        _check_utf8(path)
        cause = error.__cause__ or error.__context__ or error
        raise CorpusError(f"{path} cannot be read: {str(cause).splitlines()[0]}") from None


def _is_empty(path: Path) -> bool:
    if path.suffix not in _OPENERS:
        return path.stat().st_size == 0
    try:  # a compressed file of nothing is not itself empty
        with _open(path) as file:
            return not file.read(1)
    except _DECOMPRESSION_ERRORS:
        return False  # damaged, which reading it reports


def _open(path: Path) -> IO[bytes]:
    """`path` opened for reading, decompressed when its extension names a compression."""
    opener = _OPENERS.get(path.suffix, open)
    return opener(path, "rb")


def _check_utf8(path: Path) -> None:
    """Name the first line of `path` that is not UTF-8, and its first bad byte; or say that a
    compressed file is damaged."""
    number = 0
    try:
        with _open(path) as file:
            for number, line in enumerate(file, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise CorpusError(
                        f"{path} is not valid UTF-8: line {number} has the byte "
                        f"0x{line[error.start]:02x}; save the file as UTF-8"
                    ) from None
    except _DECOMPRESSION_ERRORS as error:
        raise CorpusError(
            f"{path} cannot be decompressed after line {number}: {error}; fetch it again"
        ) from None


def _hf_cache(paths: PathsConfig) -> str:
    return str(Path(paths.cache_dir) / "hf")


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise CorpusError(
            f"{path} not found: fetch the dataset (make data) or fix data.corpus.splits"
        )
    return path
