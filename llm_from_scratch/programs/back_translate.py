"""`scripts/back_translate.py`: monolingual text into tagged synthetic pairs, by a reverse model.

    back_translate.py --run ja_en --data wikinews_ja            data/raw/wikinews_ja_bt/
    back_translate.py --run ja_en --data wikinews_ja --limit 1000 --name wikinews_ja_bt1k
    back_translate.py --run ja_en --data wikinews_ja --engine ctranslate2   (`make export` first)
    back_translate.py --run ja_en --data news_ja_origin          a parallel corpus's target side

The model (`--run`, `--checkpoint`) translates the corpus's text into the other language: for an
en-ja model to learn from Japanese text, a ja-en model (`make train ARGS="data.direction=ja-en
name=ja_en"`, or experiment=general with it, for news). `--data NAME` is configs/data/NAME.yaml:
a monolingual corpus (data.corpus.format=monolingual, its data.corpus.skip_lines dropped), or a
parallel one whose target side is read. Each pair's source, the model's translation, starts with
the back-translation tag (data/back_translation.py); the target is the text as written.

The pairs go to <raw_dir>/NAME/ (default NAME: the corpus's name + `_bt`) as a corpus that a
`data.source=derived` config reads: configs/data/wikinews_ja_bt.yaml, mixed into
data=general_bt. Interrupted, a run goes on where it stopped; with the same model, text and
settings it is already written and returns at once. The time it takes goes to stderr and into
the corpus's lineage.json.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from llm_from_scratch.programs.arguments import Parser, UsageError, positive_int
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.evaluate import data_config, paths_config
from llm_from_scratch.programs.model_choice import (
    add_model_arguments,
    decoding_overrides,
    load_translator,
    model_file,
)

if TYPE_CHECKING:
    from llm_from_scratch.data.back_translation import SyntheticCorpus
    from llm_from_scratch.data.config import DataConfig
    from llm_from_scratch.decoding.translator import Translator
    from llm_from_scratch.paths import PathsConfig

GROUPS = ("decoding", "data", "paths")
# Sentences translated, then written, at a time: what an interruption can lose.
BATCH_SENTENCES = 64


def main(argv: Sequence[str]) -> int:
    args, settings = _parser().parse(argv)
    from llm_from_scratch.data.config import DataConfig

    data = data_config(args.data, settings)
    assert isinstance(data, DataConfig)  # --data is required
    paths = paths_config(settings)
    decoding = decoding_overrides(args, settings)
    checkpoint = model_file(args, paths.runs_dir)
    # The output and the text are refused, where they must be, before the model loads.
    directory = output_dir(args.name or f"{data.name}_bt", paths)
    texts = read_texts(data, paths)
    if args.limit is not None:
        texts = texts[: args.limit]
    translator, _ = load_translator(checkpoint, args, decoding, source_style="raw")
    text_lang, other_lang = data.corpus.tgt_lang, data.corpus.src_lang
    if (translator.source_lang, translator.target_lang) != (text_lang, other_lang):
        raise UsageError(
            f"the model translates {translator.source_lang}-{translator.target_lang}; "
            f"back-translating {data.name}'s {text_lang} text needs a {text_lang}-{other_lang} "
            f'model (make train ARGS="data.direction={text_lang}-{other_lang} name=...")'
        )
    corpus = corpus_of(directory, len(texts), data, paths, checkpoint, translator)
    return back_translate(translator, texts, corpus)


def output_dir(name: str, paths: PathsConfig) -> Path:
    """Where the synthetic corpus `name` is written, `<raw_dir>/<name>/`; refused where the
    name leads outside raw_dir or the folder holds a corpus back-translation did not write."""
    from llm_from_scratch.data.back_translation import holds_another_corpus
    from llm_from_scratch.data.config import CorpusSource
    from llm_from_scratch.data.sources import dataset_dir
    from llm_from_scratch.display import shown
    from llm_from_scratch.paths import check_inside

    check_inside(Path(paths.raw_dir), name, f"--name {name}", "a corpus name")
    directory = dataset_dir(CorpusSource(name=name), paths)
    if holds_another_corpus(directory):
        raise UsageError(
            f"{shown(directory)} holds a corpus that back-translation did not write: "
            "choose another --name"
        )
    return directory


def read_texts(data: DataConfig, paths: PathsConfig) -> list[str]:
    """The text to back-translate: a monolingual corpus's sentences, or a parallel corpus's
    train targets, fetched first."""
    from llm_from_scratch.data.corpus import read_monolingual, read_split
    from llm_from_scratch.data.sources import fetch_dataset

    fetch_dataset(data, paths)
    if data.corpus.format == "monolingual":
        return read_monolingual(data, paths)
    return list(read_split(data, "train", paths)["tgt"])


def corpus_of(
    directory: Path,
    sentences: int,
    data: DataConfig,
    paths: PathsConfig,
    model: Path,
    translator: Translator,
) -> SyntheticCorpus:
    """The synthetic corpus in `directory` of the first `sentences` of `data`'s text, as this
    model and its decoding settings make it."""
    from llm_from_scratch.checkpoint import file_sha256
    from llm_from_scratch.data.back_translation import SyntheticCorpus
    from llm_from_scratch.data.sources import dataset_dir

    model_files = sorted(model.rglob("*")) if model.is_dir() else [model]  # an export's files
    lineage = {
        "model": {
            str(path.relative_to(model.parent)): file_sha256(path)
            for path in model_files
            if path.is_file()
        },
        "text": {
            "corpus": data.name,
            "files": {
                file: file_sha256(dataset_dir(data, paths) / file)
                for file in data.corpus.file_names
            },
            "skip_lines": data.corpus.skip_lines,
            "sentences": sentences,
        },
        "decoding": asdict(translator.decode),
        "direction": f"{translator.source_lang}-{translator.target_lang}",
    }
    return SyntheticCorpus(directory, data.corpus.src_lang, data.corpus.tgt_lang, lineage)


def back_translate(translator: Translator, texts: list[str], corpus: SyntheticCorpus) -> int:
    """Write the tagged pairs of `texts` into `corpus`, going on from what it holds."""
    from tqdm import tqdm

    from llm_from_scratch.data.back_translation import tagged
    from llm_from_scratch.decoding.lines import one_line
    from llm_from_scratch.display import shown

    if corpus.is_written():
        print(
            f"{shown(corpus.directory)} is written already, by this model from this text: "
            "nothing to do",
            file=sys.stderr,
        )
        return 0
    done = corpus.written_pairs()
    if done:
        print(f"going on from sentence {done + 1:,} of {len(texts):,}", file=sys.stderr)
    start = time.perf_counter()
    remaining = texts[done:]
    try:
        with (
            corpus.append() as writer,
            tqdm(
                total=len(texts), initial=done, desc="back-translating", unit="sentence"
            ) as progress,
        ):
            for first in range(0, len(remaining), BATCH_SENTENCES):
                group = remaining[first : first + BATCH_SENTENCES]
                translations = translator.translate(group)
                pairs = zip(translations, group, strict=True)
                writer.write([(tagged(one_line(t.text)), one_line(text)) for t, text in pairs])
                progress.update(len(group))
    except KeyboardInterrupt:
        print("stopped: run the same command to go on", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - start
    rate = len(remaining) / seconds if seconds else 0.0
    corpus.finish(
        {"pairs": len(texts), "seconds": round(seconds, 1), "sentences_per_second": round(rate, 2)}
    )
    print(
        f"back-translated {len(remaining):,} sentences in {seconds:.0f} s ({rate:.1f} a second): "
        f"{shown(corpus.directory)} ({len(texts):,} pairs)",
        file=sys.stderr,
    )
    return 0


def _parser() -> Parser:
    parser = Parser("back_translate.py", __doc__, groups=GROUPS)
    parser.add_argument(
        "words",
        nargs="*",
        metavar="KEY=VALUE",
        help="decoding.KEY=VALUE, data.KEY=VALUE (of --data NAME's config), paths.KEY=VALUE",
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--data",
        metavar="NAME",
        required=True,
        help="configs/data/NAME.yaml: the text to translate",
    )
    parser.add_argument(
        "--name", metavar="NAME", help="the synthetic corpus's name (default: the corpus's + _bt)"
    )
    parser.add_argument(
        "--limit", type=positive_int, metavar="N", help="back-translate only the first N sentences"
    )
    return parser


def run() -> None:
    """`scripts/back_translate.py`."""
    run_main(main)
