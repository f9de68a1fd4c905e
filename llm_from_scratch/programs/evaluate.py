"""`scripts/evaluate.py`: translate a held-out split with a model and score it.

    evaluate.py                                       run default's model on the test split
    evaluate.py --run smoke --split dev --beam 1      another run, dev, greedy search
    evaluate.py --checkpoint runs/a/best.pt --limit 100
    evaluate.py --run a --ensemble runs/b/averaged.pt decoding.length_penalty=1.4
    evaluate.py --engine ctranslate2                  run default's CTranslate2 export
    evaluate.py --data small_parallel_enja data.corpus.detokenize_ja=false

Flags pick the model, the data and the device; other settings are KEY=VALUE words, as for
translate.py and serve.py. The model decodes with its run's own settings; `--beam`,
`decoding=PRESET` and `decoding.KEY=VALUE` replace the keys they name (a preset of
configs/decoding/: every decoding key but the run's clause_split_tokens).
Writes `hypotheses.txt` and `metrics.json` to --output-dir, by default to a folder beside the
checkpoint named by every setting that changes the scores, so that no evaluation replaces
another's: `eval-test-beam5/`, `eval-test-beam1-limit20/`, `eval-wmt_news-test-beam5/` (--data),
`eval-test-ensemble-beam5/`, `eval-test-ctranslate2-beam5/` (an export), `eval-test-best-beam5/`
(a checkpoint other than the run's final model), and a hash of any other decoding key set
(`eval-test-beam5-1a2b3c4d/`; metrics.json's `settings` lists them). It checks that the folder
can be written before decoding. It prints the scores (BLEU and chrF) with their sacreBLEU
signatures; which model was loaded, with its step and dev BLEU, goes to stderr.
A split of several corpora (a multi-corpus run's) is scored per corpus too: `corpora` in
metrics.json, one line each in the summary.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_from_scratch.data.config import SPLITS, DataConfig
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.programs.arguments import Parser, UsageError, positive_int
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.model_choice import (
    add_model_arguments,
    decoding_overrides,
    load_translator,
    model_file,
)

if TYPE_CHECKING:
    from llm_from_scratch.decoding.config import DecodingConfig
    from llm_from_scratch.evaluation.results import EvaluationSettings
    from llm_from_scratch.name_dictionary import NameDictionary
    from llm_from_scratch.paths import PathsConfig

GROUPS = ("decoding", "data", "paths")  # the config groups KEY=VALUE may set
_ENGINE_VARIANTS = {"torch": None, "ctranslate2": "ctranslate2"}  # in the output folder's name


@dataclass
class EvaluateConfig:
    """`configs/evaluate.yaml`: the corpus `--data NAME` picks, with its data.KEY=VALUE keys."""

    data: DataConfig | None = None


def main(argv: Sequence[str]) -> int:
    args, settings = parse_args(argv)
    return evaluate(args, settings)


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, str]]:
    """The flags, and the `decoding`, `data` and `paths` settings."""
    return _parser().parse(argv)


def evaluate(args: argparse.Namespace, settings: dict[str, str]) -> int:
    """Translate `args.split` with the model the flags name, score it, write the results.

    The model decodes with its run's own settings, as translate and serve do (a recipe's length
    penalty, say), except for the decoding keys the command line sets."""
    import datasets
    from tqdm import tqdm

    from llm_from_scratch.atomic import check_writable
    from llm_from_scratch.data.corpus import CORPUS_COLUMN, CorpusError, corpus_labels, load_split
    from llm_from_scratch.data.sources import fetch_data
    from llm_from_scratch.evaluation.corpora import spread_rows
    from llm_from_scratch.evaluation.report import summary, write_evaluation
    from llm_from_scratch.evaluation.scores import score, scores_per_corpus, segmented_ja
    from llm_from_scratch.paths import RunDir, check_directory
    from llm_from_scratch.schema import to_schema

    paths, chosen = paths_config(settings), data_config(args.data, settings)
    decoding = decoding_overrides(args, settings)  # refused, if bad, before the model loads
    checkpoint = model_file(args, paths.runs_dir)
    output_dir = Path(args.output_dir) if args.output_dir else None
    if output_dir is not None:  # refused before the model loads, let alone decodes
        check_directory(output_dir, "output_dir")
        check_writable(output_dir, f"the evaluation {output_dir}", "choose another --output-dir")
    translator, run_config = load_translator(checkpoint, args, decoding, source_style="raw")
    chosen_settings = _settings(args, checkpoint, chosen, translator.decode, run_config)
    if output_dir is None:
        # Each setting's scores go in a folder of their own, never over another's.
        output_dir = RunDir(checkpoint.parent).evaluation(chosen_settings.folder_name())
        check_directory(output_dir, "output_dir")  # before decoding, which takes a while
        check_writable(
            output_dir, f"the evaluation {output_dir}", "write it elsewhere with --output-dir DIR"
        )
    else:
        _warn_if_replacing(output_dir, chosen_settings)
    data, member = scored_data(chosen, to_schema(run_config["data"], DataConfig))
    datasets.disable_progress_bars()  # stderr has the translation's own
    fetch_data(data, paths)
    pairs = load_split(data, args.split, paths)
    if member is not None:
        pairs = pairs.filter(lambda corpus: corpus == member, input_columns=CORPUS_COLUMN)
    if len(pairs) == 0:  # a split held back (data.corpus.test_fraction=0), or of another corpus
        raise CorpusError(
            f"the {args.split} split of {member or data.name} has no pairs (held back, or "
            "carved to none): score another split (--split dev)"
        )
    corpora = corpus_labels(pairs, data.name)
    if args.limit is not None:  # the first of each corpus, so that a mixed split shows them all
        chosen_rows = spread_rows(corpora, args.limit)
        pairs, corpora = pairs.select(chosen_rows), [corpora[index] for index in chosen_rows]

    sources, references = list(pairs["src"]), list(pairs["tgt"])

    start = time.perf_counter()
    with tqdm(
        total=len(sources),
        desc=f"translating {args.split}",
        unit="sentence",
        disable=not sys.stderr.isatty(),
        file=sys.stderr,
        dynamic_ncols=True,
    ) as bar:
        translations = []
        for translation in translator.translate_iter(sources):
            translations.append(translation)
            bar.update(1)
    seconds = time.perf_counter() - start

    languages = (data.source_lang, data.target_lang)
    dictionary = _name_dictionary(data.target_lang)
    metrics = {
        "checkpoint": str(checkpoint),
        "ensemble": args.ensemble,
        "dataset": member or data.name,
        "direction": f"{data.source_lang}-{data.target_lang}",
        "split": args.split,
        "limit": args.limit,
        "settings": chosen_settings.to_dict(),
        "device": str(translator.device),
        "engine": args.engine,
        "decoding": asdict(translator.decode),
        **score(
            sources,
            translations,
            references,
            languages,
            segmented_ja(references, languages),
            dictionary,
        ),
        **scores_per_corpus(sources, translations, references, corpora, languages, dictionary),
        "seconds": seconds,
        "sentences_per_second": len(translations) / seconds if seconds > 0 else None,
    }
    write_evaluation(output_dir, [t.text for t in translations], metrics)
    print(summary(metrics))
    print(f"wrote {output_dir / 'hypotheses.txt'} and {output_dir / 'metrics.json'}")
    return 0


def _name_dictionary(target_lang: str) -> NameDictionary | None:
    """The dictionary the names rendered are counted with, for a Japanese target; where it is
    not installed, the scores go without and the user is told how to install it."""
    from llm_from_scratch.name_dictionary import DICTIONARY_FILES, load_dictionary

    if target_lang != "ja":
        return None
    dictionary = load_dictionary()
    if dictionary is None:
        files = ", ".join(str(path) for path in DICTIONARY_FILES)
        print(
            f"note: no names rendered score: {files} missing (apt-get install enamdict edict)",
            file=sys.stderr,
        )
    return dictionary


def _settings(
    args: argparse.Namespace,
    checkpoint: Path,
    chosen: DataConfig | None,
    decode: DecodingConfig,
    run_config: dict[str, Any],
) -> EvaluationSettings:
    """What the scores depend on, which names their folder: the corpus when not the run's own,
    the engine or ensemble, the checkpoint when not the run's final model, the search (its
    keys unlike the run's own) and `--limit`."""
    from llm_from_scratch.decoding.config import DecodingConfig
    from llm_from_scratch.evaluation.results import EvaluationSettings, other_decoding
    from llm_from_scratch.paths import RunDir
    from llm_from_scratch.schema import to_schema

    other = chosen is not None and chosen.name != run_config["data"]["name"]
    variant = "ensemble" if args.ensemble else _ENGINE_VARIANTS[args.engine]
    stem = None
    if args.engine == "torch":
        finals = [path for path in RunDir(checkpoint.parent).final_models if path.is_file()]
        final = finals[0].resolve() if finals else None
        stem = None if final == checkpoint.resolve() else checkpoint.stem
    own = asdict(to_schema(run_config.get("decoding") or {}, DecodingConfig))
    return EvaluationSettings(
        split=args.split,
        dataset=chosen.name if other else None,
        variant=variant,
        checkpoint=stem,
        beam=decode.beam_size,
        limit=args.limit,
        other_decoding=other_decoding(asdict(decode), own),
    )


def _warn_if_replacing(output_dir: Path, settings: EvaluationSettings) -> None:
    """Say so when --output-dir holds the results of other settings, which this run replaces."""
    from llm_from_scratch.evaluation.results import recorded_settings

    recorded = recorded_settings(output_dir)
    if recorded is not None and recorded != settings.to_dict():
        print(
            f"note: replacing {output_dir}'s results of other settings ({recorded})",
            file=sys.stderr,
        )


def paths_config(settings: dict[str, str]) -> PathsConfig:
    """The paths the `paths.KEY=VALUE` settings give, the others under their root."""
    from llm_from_scratch.paths import PathsConfig
    from llm_from_scratch.schema import to_schema, unknown_key

    known = [field.name for field in fields(PathsConfig)]
    overrides = {k.removeprefix("paths."): v for k, v in settings.items() if k.startswith("paths.")}
    for key in overrides:
        if key not in known:
            raise ConfigError(unknown_key(f"paths.{key}", known, "paths."))
    return to_schema(overrides, PathsConfig)


def data_config(name: str | None, settings: dict[str, str]) -> DataConfig | None:
    """configs/data/`name`.yaml with the `data.KEY=VALUE` settings; None without `name` (the
    run's own data, which they cannot change)."""
    keys = [f"{key}={value}" for key, value in settings.items() if key.startswith("data.")]
    if name is None:
        if keys:
            raise UsageError(f"{keys[0]} sets a key of --data NAME's config: add --data")
        return None
    from llm_from_scratch.paths import check_inside, config_dir
    from llm_from_scratch.programs.common import compose_config, register_schema

    check_inside(config_dir() / "data", name, f"--data {name}", "a config file")
    register_schema("evaluate_schema", EvaluateConfig)  # its DataConfig types the data keys
    return compose_config("evaluate", [f"data={name}", *keys], EvaluateConfig).data


def scored_data(chosen: DataConfig | None, trained: DataConfig) -> tuple[DataConfig, str | None]:
    """The data to score on, and the corpus of its mixture to keep (None: all of it): the run's
    own; a corpus of the run's mixture as the mixture reads it (in the model's source style); or
    the `--data` corpus read in the model's direction (which the model, not that corpus's
    config, decides)."""
    if chosen is None:
        return trained, None
    if chosen.name in trained.mixture:
        return trained, chosen.name
    try:
        return replace(chosen, direction=f"{trained.source_lang}-{trained.target_lang}"), None
    except ConfigError as error:
        raise ConfigError(f"--data {chosen.name} cannot score this model: {error}") from None


def _parser() -> Parser:
    parser = Parser("evaluate.py", __doc__, groups=GROUPS)
    parser.add_argument(
        "words",
        nargs="*",
        metavar="KEY=VALUE",
        help="decoding=PRESET or decoding.KEY=VALUE: a decoding key; data.KEY=VALUE: a key of "
        "--data NAME's config (e.g. data.mirror=DIR); paths.KEY=VALUE: where data, caches and "
        "runs live (paths.root, paths.raw_dir, paths.cache_dir, paths.runs_dir)",
    )
    add_model_arguments(parser)
    parser.add_argument("--split", choices=SPLITS, default="test", help="the split to score")
    parser.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="score only the first N sentences (of a split of several corpora: of each, evenly)",
    )
    parser.add_argument(
        "--output-dir", metavar="DIR", help="where to write hypotheses.txt and metrics.json"
    )
    parser.add_argument(
        "--data",
        metavar="NAME",
        help="score on configs/data/NAME.yaml's corpus (default: the one the model was trained on)",
    )
    return parser


def run() -> None:
    """`scripts/evaluate.py`."""
    run_main(main)
