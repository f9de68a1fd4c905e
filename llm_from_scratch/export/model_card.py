"""The model card (README.md) of a transformers export, in the Hub's format: YAML metadata
(languages, license, datasets, metrics with their sacreBLEU signatures), then what the model is,
how to run it, and what this project's translator does that a transformers pipeline does not."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from llm_from_scratch.export.length_penalty import TYPICAL_OUTPUT_TOKENS

# The decoding keys `generation_config.json` carries, with the values a run's config without
# them gets there: a score on the card must come from this search, or it describes another
# model than the one the Hub runs. The length penalty counts only in a beam search.
GENERATION_KEYS = {"beam_size": 1, "no_repeat_ngram_size": 0, "length_penalty": 0.0}

# The licenses of the corpora the configs name (the Hub's identifiers); a model trained on
# several carries the share-alike one where the others are plain attribution.
CORPUS_LICENSES = {
    "small_parallel_enja": "cc-by-4.0",
    "tanaka_graded": "cc-by-sa-4.0",
    "kyoto_wiki": "cc-by-sa-3.0",
    "kftt": "cc-by-sa-3.0",
    "bsd_ja_en": "cc-by-nc-sa-4.0",
}
CORPUS_SOURCES = {
    "small_parallel_enja": "https://github.com/odashi/small_parallel_enja",
    "tanaka_graded": "https://github.com/marmooo/graded-enja-corpus",
    "kyoto_wiki": "https://alaginrc.nict.go.jp/WikiCorpus/",
    "kftt": "https://www.phontron.com/kftt/",
    "bsd_ja_en": "https://github.com/tsuruoka-lab/BSD",
}
PROJECT_EXTRAS = (
    "sentence splitting (each sentence of a line translated alone, then joined), number and name "
    "placeholders (numbers and rare names copied through the model as placeholders and written "
    "back), number repair (a number the model changed set back to the source's) and loop "
    "avoidance (a beam output that repeats itself replaced by the best one that does not)"
)


def corpora(config: dict[str, Any]) -> list[str]:
    """The corpora a run trained on: a mixture's members, else its dataset."""
    data = config["data"]
    return sorted(data.get("mixture") or {}) or [data["name"]]


def license_of(names: list[str]) -> str:
    """The Hub license of a model trained on the corpora `names`: theirs where they agree, the
    share-alike one where the rest only ask attribution, else `other`."""
    licenses = {CORPUS_LICENSES.get(name, "other") for name in names}
    if len(licenses) == 1:
        return licenses.pop()
    share_alike = {license for license in licenses if "-sa-" in license}
    if len(share_alike) == 1 and licenses - share_alike <= {"cc-by-4.0"}:
        return share_alike.pop()
    return "other"


def card_metrics(
    evaluations: Iterable[Path], checkpoint: Path, config: dict[str, Any]
) -> dict[str, Any] | None:
    """The scores a model card may quote, of the evaluation folders `evaluations` (`make eval`'s,
    `RunDir.evaluations`): the newest full test evaluation of `checkpoint` on its run's own data
    (`config` its run's), by the torch engine alone, whose search is the one its generation
    config names. None when there is none: a `--limit`, `--beam 1` or other corpus's result is
    never quoted. A folder from before evaluations recorded their settings (`eval-test/`) counts
    when its split, corpus and search match."""
    found = []
    for folder in evaluations:
        path = folder / "metrics.json"
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(metrics, dict) and _quotable(metrics, checkpoint, config):
            found.append((path.stat().st_mtime, metrics))
    return max(found, key=lambda item: item[0])[1] if found else None


def _quotable(metrics: dict[str, Any], checkpoint: Path, config: dict[str, Any]) -> bool:
    settings = metrics.get("settings")
    own = settings.get("dataset") is None if isinstance(settings, dict) else True
    decoding, searched = config.get("decoding") or {}, metrics.get("decoding") or {}
    return (
        metrics.get("split") == "test"
        and metrics.get("limit") is None
        and own
        and metrics.get("dataset") == config["data"]["name"]
        and metrics.get("engine", "torch") == "torch"
        and not metrics.get("ensemble")
        and Path(str(metrics.get("checkpoint"))).name == checkpoint.name
        and _same_search(searched, decoding)
        and all(key in metrics for key in ("bleu", "chrf"))
    )


def _same_search(searched: dict[str, Any], decoding: dict[str, Any]) -> bool:
    keys = dict(GENERATION_KEYS)
    if int(decoding.get("beam_size", keys["beam_size"])) == 1:
        keys.pop("length_penalty")
    return all(
        key in searched and float(searched[key]) == float(decoding.get(key, default))
        for key, default in keys.items()
    )


def model_card(
    manifest: dict[str, Any], metrics: dict[str, Any] | None, parameters: int, name: str
) -> str:
    """README.md of an export: `manifest` as `export_to_transformers` writes it, `metrics` the
    run's test scores (`make eval`'s metrics.json) or None, `name` what the usage loads (a Hub
    repository or the folder)."""
    config = manifest["config"]
    data = config["data"]
    source, target = _languages(data)
    names = corpora(config)
    run = manifest.get("run") or data["name"]
    metadata = [
        "---",
        "language:",
        f"- {source}",
        f"- {target}",
        f"license: {license_of(names)}",
        "library_name: transformers",
        "pipeline_tag: translation",
        "tags:",
        "- translation",
        f"- {source}-{target}",
        "- llm-from-scratch",
        "datasets:",
        *[f"- {name}" for name in names],
        "metrics:",
        "- bleu",
        "- chrf",
    ]
    if metrics:
        metadata += _model_index(run, names, source, target, metrics)
    metadata.append("---")
    decoding = config["decoding"]
    body = f"""
# {run}: {source}→{target} translation, trained from scratch

An encoder–decoder Transformer of {parameters / 1e6:.1f} M parameters, trained with
llm-from-scratch (an English–Japanese NMT project) on {", ".join(names)}
(step {manifest.get("step")}, greedy dev BLEU {_number(manifest.get("dev_bleu"))}), exported as
a stock `{manifest["model_class"]}`: no custom code, no `trust_remote_code`.

## Usage

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("{name}")
model = AutoModelForSeq2SeqLM.from_pretrained("{name}")
batch = tokenizer(["Hello.", "How are you?"], return_tensors="pt", padding=True)
outputs = model.generate(**batch)  # the run's search: generation_config.json
print(tokenizer.batch_decode(outputs, skip_special_tokens=True))
```

With transformers 4, `pipeline("translation", model="{name}")` does the same (transformers 5
removed the translation pipeline).

## What a transformers pipeline does not do

This model translates what it is given, one sentence at a time: give it sentences. The project's
own translator adds {PROJECT_EXTRAS}; a transformers pipeline or `generate` does none of these.
Without them the model writes numbers and rare names from its pieces.

## Search

`generation_config.json`: beam {decoding.get("beam_size")}, no-repeat n-gram
{decoding.get("no_repeat_ngram_size")}, length penalty β = α L₀ / (L₀ + 5) with
L₀ = {TYPICAL_OUTPUT_TOKENS}, from the run's GNMT α = {
        decoding.get("length_penalty")
    } (transformers divides by L^β, the project by
((5 + L) / 6)^α: they grow alike at L = L₀), at most {config["model"]["max_positions"]} tokens.
Greedy search (`num_beams=1`) is the project's own, token for token.

## Vocabulary

Separate source and target vocabularies are one here: the source's ids first, then the target's,
whose rows the output never takes (a final_logits_bias of -inf). `tokenizer.json` encodes as the
project's tokenizer does (byte fallback: no unknown token) and decodes the target's ids.

## Training

`make train` in the project (run `{run}`); the resolved config is `llm_from_scratch.json`'s
`config`. Corpora: {
        "; ".join(
            f"{name} ({CORPUS_SOURCES.get(name, 'local')}, "
            f"{CORPUS_LICENSES.get(name, 'license unknown')})"
            for name in names
        )
    }.
"""
    body += "\n## Evaluation\n\n"
    if metrics:
        body += _scores_table(metrics)
    else:
        body += (
            "No full test evaluation with this search (beam "
            f"{decoding.get('beam_size')}, as `generation_config.json`) was found beside the "
            "checkpoint: `make eval` in the project writes one, and a new export quotes it.\n"
        )
    return "\n".join(metadata) + "\n" + body


def _languages(data: dict[str, Any]) -> tuple[str, str]:
    corpus = data["corpus"]
    source, target = corpus.get("src_lang", "en"), corpus.get("tgt_lang", "ja")
    if data.get("direction") == f"{target}-{source}":
        return target, source
    return source, target


def _number(value: Any) -> str:
    return "unknown" if value is None else f"{value:.1f}"


def _model_index(
    run: str, names: list[str], source: str, target: str, metrics: dict[str, Any]
) -> list[str]:
    rows = [("test", names[0] if len(names) == 1 else "+".join(names), metrics)]
    rows += [(f"{name} test", name, scores) for name, scores in metrics.get("corpora", {}).items()]
    lines = ["model-index:", f"- name: {run}", "  results:"]
    for label, dataset, scores in rows:
        lines += [
            "  - task:",
            "      type: translation",
            f"      name: Translation {source}-{target}",
            "    dataset:",
            f"      name: {label}",
            f"      type: {dataset}",
            "      split: test",
            "    metrics:",
        ]
        for metric, key in (("bleu", "bleu"), ("chrf", "chrf")):
            if key in scores:
                signature = metrics.get(f"{key}_signature", "")
                lines += [
                    f"    - type: {metric}",
                    f"      value: {round(float(scores[key]), 2)}",
                    f"      name: {metric.upper() if metric == 'bleu' else 'chrF'}",
                    f"      args: {json.dumps(signature)}",
                ]
    return lines


def _scores_table(metrics: dict[str, Any]) -> str:
    """The test scores with their sacreBLEU signatures (beam search and the project's translator,
    `make eval`)."""
    lines = ["| test set | sentences | BLEU | chrF |", "|---|---:|---:|---:|"]
    lines.append(f"| all | {metrics.get('sentences')} | {metrics['bleu']:.2f} | "
                 f"{metrics['chrf']:.2f} |")  # fmt: skip
    for name, scores in metrics.get("corpora", {}).items():
        lines.append(
            f"| {name} | {scores.get('sentences')} | {scores['bleu']:.2f} | {scores['chrf']:.2f} |"
        )
    lines += [
        "",
        f"BLEU: `{metrics.get('bleu_signature')}`; chrF: `{metrics.get('chrf_signature')}`.",
        f"Scored with the project's translator (`make eval`: the extras above on), beam "
        f"{(metrics.get('decoding') or {}).get('beam_size', 'unknown')}.",
        "",
    ]
    return "\n".join(lines)
