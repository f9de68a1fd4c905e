"""`scripts/evaluate.py`: translate a held-out split with a model and score it.

    evaluate.py                                       run default's model on the test split
    evaluate.py --run smoke --split dev --beam 1      another run, dev, greedy search
    evaluate.py --checkpoint runs/a/best.pt --limit 100
    evaluate.py --run a --ensemble runs/b/averaged.pt decoding.length_penalty=1.4
    evaluate.py --engine ctranslate2                  run default's CTranslate2 export
    evaluate.py --cfg job                             print the composed config (Hydra's --cfg)

Flags pick the model, the data and the device; any other key of configs/evaluate.yaml is set as
KEY=VALUE. The model decodes with its run's own settings, as translate.py does; `--beam`,
`decoding=PRESET` and `decoding.KEY=VALUE` replace the keys they name (a preset: those its
configs/decoding/PRESET.yaml sets).
Writes `hypotheses.txt` and `metrics.json` to --output-dir (default: `eval-<split>/`
beside the checkpoint; for an ensemble, `eval-<split>-ensemble/`; for an export,
`eval-<split>-ctranslate2/` beside it) and prints the scores with
their sacreBLEU signatures; which model was loaded, with its step and dev BLEU, goes to stderr.
A split of several corpora (a multi-corpus run's) is scored per corpus too: `corpora` in
metrics.json, one line each in the summary.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import datasets
import hydra
from omegaconf import MISSING, DictConfig, OmegaConf
from tqdm import tqdm

from llm_from_scratch.checkpoint import run_model
from llm_from_scratch.data.config import SPLITS, DataConfig
from llm_from_scratch.data.corpus import (
    CORPUS_COLUMN,
    CorpusError,
    corpus_labels,
    load_split,
)
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.translator import (
    Translation,
    Translator,
    joiner_for,
    restore_models,
    run_decoding,
)
from llm_from_scratch.device import resolve_device
from llm_from_scratch.errors import ConfigError, check_choice
from llm_from_scratch.evaluation.corpora import rows_by_corpus, spread_rows
from llm_from_scratch.evaluation.fidelity import (
    LOOP_NGRAM,
    LOOP_TIMES,
    STUTTER_TIMES,
    STUTTER_UNIT_WORDS,
    looping_outputs,
    number_fidelity,
)
from llm_from_scratch.evaluation.metrics import bleu, corpus_scores
from llm_from_scratch.evaluation.report import (
    REPEAT_NGRAM,
    bleu_by_source_length,
    has_repeated_ngram,
    write_evaluation,
)
from llm_from_scratch.export.ctranslate2_model import run_export_dir
from llm_from_scratch.paths import PathsConfig, check_directory, config_dir
from llm_from_scratch.programs.arguments import (
    DEFAULT_RUN,
    ENGINES,
    HYDRA_CFG_OPTIONS,
    HYDRA_OPTIONS,
    Parser,
    UsageError,
    add_model_arguments,
    option_name,
    options_first,
    override,
    parser_from_doc,
    positive_int,
    quoted,
    refuse_flag_key,
    refuse_unknown_option,
    without_flags,
)
from llm_from_scratch.programs.command import exit_on_user_error, run_main
from llm_from_scratch.programs.common import (
    compose_config,
    register_schema,
)
from llm_from_scratch.schema import to_schema
from llm_from_scratch.segmentation import detokenize_ja, is_segmented


@dataclass
class EvaluateConfig:
    """`configs/evaluate.yaml`."""

    run: str = DEFAULT_RUN  # whose final model to score when `checkpoint` is None
    checkpoint: str | None = None
    # More checkpoints that decode together with the model, averaging each step's next-token
    # probabilities; they must share its tokenizers.
    ensemble: list[str] = field(default_factory=list)
    split: str = "test"
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig | None = None  # None: the dataset the checkpoint was trained on
    decoding: DecodingConfig = MISSING
    device: str = "auto"  # auto: CUDA when available, else CPU
    # torch: the checkpoint; ctranslate2: its export (`make export`), where `checkpoint` names
    # the export directory and `run` looks in runs/<run>/ctranslate2/.
    engine: str = "torch"
    output_dir: str | None = None  # None: eval-<split>/ beside the checkpoint
    # Score only the first `limit` sentences (quick checks); of a split of several corpora, the
    # first of each, evenly.
    limit: int | None = None

    def __post_init__(self) -> None:
        check_choice("split", self.split, SPLITS)
        check_choice("engine", self.engine, ENGINES)
        if self.engine == "ctranslate2" and self.ensemble:
            raise ConfigError("engine=ctranslate2 decodes one exported model, not an ensemble")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit={self.limit} must be at least 1")


register_schema("evaluate_schema", EvaluateConfig)


def main(argv: Sequence[str]) -> int:
    overrides = parse_args(argv)
    if any(option_name(arg) in HYDRA_OPTIONS for arg in overrides):
        return hand_to_hydra(overrides)
    return evaluate(load_config(overrides), decoding_keys(overrides))


def decoding_keys(overrides: Sequence[str]) -> frozenset[str]:
    """The decoding keys the command line sets: those a preset it names sets (`decoding=greedy`:
    the keys of `configs/decoding/greedy.yaml`) and those it sets as `decoding.KEY=VALUE`
    (`--beam` among them)."""
    parsed = dict(parsed for parsed in map(override, overrides) if parsed)
    keys = {key.removeprefix("decoding.") for key in parsed if key.startswith("decoding.")}
    if "decoding" in parsed:
        preset = config_dir() / "decoding" / f"{parsed['decoding']}.yaml"
        keys |= set(OmegaConf.load(preset)) if preset.is_file() else set()
    return frozenset(keys)


def evaluate(config: EvaluateConfig, decoding: Collection[str] = ()) -> int:
    """Translate `config.split` with the model `config` names, score it, write the results.

    The model decodes with its run's own settings, as translate and serve do (a recipe's length
    penalty, say), except for the `decoding` keys, which take `config.decoding`'s values."""
    if config.engine == "ctranslate2":
        checkpoint = Path(config.checkpoint or run_export_dir(config.paths.runs_dir, config.run))
        suffix = "-ctranslate2"
    else:
        checkpoint = Path(config.checkpoint or run_model(config.paths.runs_dir, config.run))
        suffix = "-ensemble" if config.ensemble else ""
    output_dir = Path(config.output_dir) if config.output_dir else None
    if output_dir is not None:  # refused before the model loads, let alone decodes
        check_directory(output_dir, "output_dir")
    overrides = {key: getattr(config.decoding, key) for key in decoding}
    translator, run_config = _load_translator(config, checkpoint, overrides)
    if output_dir is None:
        # Another dataset's scores go beside those of the run's own, never over them.
        other = config.data is not None and config.data.name != run_config["data"]["name"]
        dataset = f"{config.data.name}-" if other else ""
        output_dir = checkpoint.parent / f"eval-{dataset}{config.split}{suffix}"
        check_directory(output_dir, "output_dir")  # before decoding, which takes a while
    for summary in translator.checkpoints:
        print(f"model: {summary}", file=sys.stderr)
    data, member = _scored_data(config.data, to_schema(run_config["data"], DataConfig))
    translator.joiner = joiner_for(data.target_lang)
    datasets.disable_progress_bars()  # stderr has the translation's own
    fetch_data(data, config.paths)
    pairs = load_split(data, config.split, config.paths)
    if member is not None:
        pairs = pairs.filter(lambda corpus: corpus == member, input_columns=CORPUS_COLUMN)
    if len(pairs) == 0:  # a split held back (data.corpus.test_fraction=0), or of another corpus
        raise CorpusError(
            f"the {config.split} split of {member or data.name} has no pairs (held back, or "
            "carved to none): score another split (--split dev)"
        )
    corpora = corpus_labels(pairs, data.name)
    if config.limit is not None:  # the first of each corpus, so that a mixed split shows them all
        chosen = spread_rows(corpora, config.limit)
        pairs, corpora = pairs.select(chosen), [corpora[index] for index in chosen]

    sources, references = list(pairs["src"]), list(pairs["tgt"])

    start = time.perf_counter()
    with tqdm(
        total=len(sources),
        desc=f"translating {config.split}",
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
    metrics = {
        "checkpoint": str(checkpoint),
        "ensemble": config.ensemble,
        "dataset": member or data.name,
        "direction": f"{data.source_lang}-{data.target_lang}",
        "split": config.split,
        "device": str(translator.device),
        "engine": config.engine,
        "decoding": asdict(translator.decode),
        **score(sources, translations, references, languages, segmented_ja(references, languages)),
        **scores_per_corpus(sources, translations, references, corpora, languages),
        "seconds": seconds,
        "sentences_per_second": len(translations) / seconds if seconds > 0 else None,
    }
    write_evaluation(output_dir, [t.text for t in translations], metrics)
    _print_summary(metrics, output_dir)
    return 0


def _scored_data(chosen: DataConfig | None, trained: DataConfig) -> tuple[DataConfig, str | None]:
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


def _load_translator(
    config: EvaluateConfig, model: Path, decoding: dict[str, Any]
) -> tuple[Translator, dict[str, Any]]:
    """The translator of `model` (a checkpoint, or with engine=ctranslate2 an export directory),
    decoding with the run's settings and `decoding`'s keys replaced, and the run's config."""
    # The split's sources are read in the run's own style already.
    if config.engine == "ctranslate2":
        translator = Translator.from_export(model, config.device, source_style="raw", **decoding)
        return translator, translator.model.config
    restored = restore_models([model, *config.ensemble], resolve_device(config.device))
    decode = run_decoding(restored.config, None, decoding)
    translator = Translator.from_restored(restored, decode, source_style="raw")
    return translator, restored.config


def parse_args(argv: Sequence[str]) -> list[str]:
    """The command line as Hydra overrides: the flags turned into the keys they set, then the
    KEY=VALUE overrides and Hydra's own options, in their order."""
    parser = parser_from_doc(_Parser, "evaluate.py", __doc__)
    add_model_arguments(parser)
    parser.add_argument("--split", choices=SPLITS, help="the split to score (default: test)")
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
    args, rest = parser.parse_known_args(argv)
    options = {option_name(arg): arg for arg in rest if arg.startswith("-")}
    for option, arg in options.items():
        if option not in HYDRA_OPTIONS + HYDRA_CFG_OPTIONS:
            refuse_unknown_option(arg, parser.prog)
        if option in HYDRA_CFG_OPTIONS and not {"--cfg", "-c"} & options.keys():
            raise UsageError(f"{option} needs --cfg")
    for arg in rest:
        refuse_flag_key(arg)
    flags = {
        "run": quoted(args.run),
        "checkpoint": args.checkpoint and quoted(args.checkpoint),
        "ensemble": args.ensemble and "[" + ",".join(map(quoted, args.ensemble)) + "]",
        "device": quoted(args.device),
        "engine": args.engine,
        "decoding.beam_size": args.beam,
        "split": args.split,
        "limit": args.limit,
        "output_dir": args.output_dir and quoted(args.output_dir),
        "data": args.data,
    }
    return [f"{key}={value}" for key, value in flags.items() if value] + rest


def hand_to_hydra(overrides: Sequence[str]) -> int:
    """Let Hydra answer its own options (`--cfg`, `--info`, shell completion)."""
    sys.argv = [sys.argv[0], *options_first(overrides)]
    if "COMP_LINE" in os.environ:  # a shell completion query: Hydra completes KEY=VALUE
        os.environ["COMP_LINE"] = without_flags(os.environ["COMP_LINE"])
    _hydra_main()  # prints what was asked and returns without evaluating
    return 0


class _Parser(Parser):
    def format_help(self) -> str:
        return super().format_help() + "\n" + keys_help()


def keys_help() -> str:
    """The config keys without a flag, with their defaults, for `--help`."""
    decoding = asdict(load_config([]).decoding)
    presets = sorted(path.stem for path in (config_dir() / "decoding").glob("*.yaml"))
    corpora = sorted(path.stem for path in (config_dir() / "data").glob("*.yaml"))
    paths = ", ".join(f"paths.{key}" for key in asdict(PathsConfig()) if key != "run_dir")
    settings = [
        f"decoding={'|'.join(presets)}",
        *(f"decoding.{k}={v}" for k, v in decoding.items()),
    ]
    lines = [
        "other settings, as KEY=VALUE (defaults shown; --cfg job prints them all; decoding keys "
        "not set here are the run's own):",
        *textwrap.wrap("  ".join(settings), 96, initial_indent="  ", subsequent_indent="  "),
        f"  {paths}",
        *textwrap.wrap(
            f"data.* (with --data NAME: any key of that config, e.g. data.mirror=DIR); "
            f"the NAMEs: {', '.join(corpora)}",
            96,
            initial_indent="  ",
            subsequent_indent="    ",
        ),
        "Hydra's options: --cfg job|all [--resolve], --info, -sc install=bash (shell completion)",
    ]
    return "\n".join(lines) + "\n"


def load_config(overrides: Sequence[str]) -> EvaluateConfig:
    """Compose `configs/evaluate.yaml` with Hydra `overrides` and validate it."""
    return compose_config("evaluate", overrides, EvaluateConfig)


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="evaluate")
def _hydra_main(cfg: DictConfig) -> None:
    """Hydra's entry point, for its own options (`--cfg`, `--info`, shell completion)."""
    with exit_on_user_error():
        evaluate(to_schema(cfg, EvaluateConfig))


def score(
    sources: Sequence[str],
    translations: Sequence[Translation],
    references: Sequence[str],
    languages: tuple[str, str],
    segmented: bool,
) -> dict[str, Any]:
    """The scores of `metrics.json`. `languages`: the sources' and the translations' (BLEU cuts
    words as the target language needs).

    `segmented`: the references keep a corpus's word segmentation (small_parallel_enja with
    data.corpus.detokenize_ja=false).
    The main scores are then computed with the segmentation spaces removed from both sides, so
    that they compare with runs on unsegmented text, and BLEU on the corpus's own segmentation
    (tokenize="none") is added.
    """
    hypotheses = [t.text for t in translations]
    plain_hyps = [detokenize_ja(h) for h in hypotheses] if segmented else hypotheses
    plain_refs = [detokenize_ja(r) for r in references] if segmented else list(references)
    metrics: dict[str, Any] = {"sentences": len(hypotheses)}
    source_lang, target_lang = languages
    metrics.update(corpus_scores(plain_hyps, plain_refs, target_lang).to_dict())
    if segmented:
        segmented_bleu = bleu(hypotheses, references, tokenize="none")
        metrics["bleu_segmented"] = segmented_bleu.score
        metrics["bleu_segmented_detail"] = str(segmented_bleu)
    metrics["bleu_by_source_length"] = bleu_by_source_length(
        sources, plain_hyps, plain_refs, target_lang
    )
    metrics["hit_max_len"] = sum(t.candidates[0].hit_max_len for t in translations if t.candidates)
    metrics[f"repeated_{REPEAT_NGRAM}gram"] = sum(
        has_repeated_ngram(t.candidates[0].tokens) for t in translations if t.candidates
    )
    metrics["number_fidelity"] = number_fidelity(sources, plain_hyps).to_dict()
    # Outputs that stutter or repeat a word 4-gram where their source does not: loops.
    metrics["loops"] = len(looping_outputs(sources, plain_hyps, source_lang, target_lang))
    return metrics


def segmented_ja(references: Sequence[str], languages: tuple[str, str]) -> bool:
    """Whether word-level BLEU is added: only where Japanese references keep a corpus's
    segmentation."""
    return languages[1] == "ja" and is_segmented(references)


def scores_per_corpus(
    sources: Sequence[str],
    translations: Sequence[Translation],
    references: Sequence[str],
    corpora: Sequence[str],
    languages: tuple[str, str],
) -> dict[str, Any]:
    """`{"corpora": {corpus: scores}}` where the split mixes several corpora (else nothing): each
    corpus scored alone, as `score` scores a split, without the signatures the overall scores
    already give."""
    rows = rows_by_corpus(corpora)
    if len(rows) < 2:
        return {}
    by_corpus = {}
    for corpus, positions in rows.items():
        own_refs = [references[i] for i in positions]
        scores = score(
            [sources[i] for i in positions],
            [translations[i] for i in positions],
            own_refs,
            languages,
            segmented=segmented_ja(own_refs, languages),
        )
        by_corpus[corpus] = {k: v for k, v in scores.items() if not k.endswith("_signature")}
    return {"corpora": by_corpus}


def _print_summary(metrics: dict[str, Any], output_dir: Path) -> None:
    print(
        f"{metrics['dataset']} {metrics['split']} ({metrics['direction']}): "
        f"{metrics['sentences']} sentences"
    )
    print(f"BLEU  {metrics['bleu']:.2f}  {metrics['bleu_signature']}")
    print(f"chrF  {metrics['chrf']:.2f}  {metrics['chrf_signature']}")
    print(f"char BLEU  {metrics['char_bleu']:.2f}  {metrics['char_bleu_signature']}")
    if "bleu_segmented" in metrics:
        print(f"BLEU on the corpus segmentation (tokenize=none)  {metrics['bleu_segmented']:.2f}")
    print(
        f"{metrics['sentences_per_second']:.1f} sentences/s; {metrics['hit_max_len']} hit max_len; "
        f"{metrics[f'repeated_{REPEAT_NGRAM}gram']} with a repeated {REPEAT_NGRAM}-gram"
    )
    print(
        f"numbers kept: {_numbers_kept(metrics)}; {metrics['loops']} outputs loop where the "
        f"source does not (1 to {STUTTER_UNIT_WORDS} words {STUTTER_TIMES} times in a row, or a "
        f"{LOOP_NGRAM}-gram {LOOP_TIMES} times)"
    )
    for corpus, scores in metrics.get("corpora", {}).items():
        print(
            f"  {corpus}: {scores['sentences']} sentences, BLEU {scores['bleu']:.2f}, "
            f"chrF {scores['chrf']:.2f}, numbers kept {_numbers_kept(scores)}"
        )
    print(f"wrote {output_dir / 'hypotheses.txt'} and {output_dir / 'metrics.json'}")


def _numbers_kept(metrics: dict[str, Any]) -> str:
    fidelity = metrics["number_fidelity"]
    if fidelity["share"] is None:
        return "no numbers in the sources"
    return f"{100 * fidelity['share']:.1f}% ({fidelity['kept']} of {fidelity['source_numbers']})"


def run() -> None:
    """`scripts/evaluate.py`."""
    run_main(main)
