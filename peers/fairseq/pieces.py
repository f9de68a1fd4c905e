"""The project's side of peers/fairseq/run.sh, run with the project's Python.

`export [--test-lines N] WORK [OVERRIDE ...]`: prepare `make train`'s data as `make train`
does (fetch, train or load the BPE tokenizers, tokenize and clean; Hydra overrides as `make
train` takes them), with every path under WORK/project/, and write WORK/text/: train and dev as
the token ids the project trains and validates on, one pair a line, ids written as words; dict.en
and dict.ja, fairseq's dictionaries of those ids; test.en, the test sources as the project's
translator reads them (sentence by sentence, numbers and unseen names masked, no clause split),
one sentence a line; tokenizer.ja.json, the target tokenizer; test.json, what `restore` needs
to rebuild each line; test.ref.ja and test.corpus, the references and the corpus of each line.

`restore WORK HYPOTHESES`: fairseq-interactive's output (its H- lines, ids as words) back into
text, one translation a test line, as the project's translator writes its sentences: decoded,
numbers and names written back, numbers repaired, sentences joined.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path

import datasets

from llm_from_scratch.data.config import CORPUS_COLUMN
from llm_from_scratch.data.names import restore_names
from llm_from_scratch.data.placeholders import restore_numbers
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.lines import one_line
from llm_from_scratch.decoding.number_repair import repair_numbers
from llm_from_scratch.decoding.segmentation import source_sentences
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.programs.train import prepare_data
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.training.config import TrainConfig

_HYPOTHESIS = re.compile(r"^H-(\d+)\t\S+\t?(.*)$")


def words(ids: list[int]) -> str:
    return " ".join(map(str, ids))


def write_dictionary(path: Path, tokenizer: BPETokenizer) -> None:
    """Every id but the project's own specials (fairseq adds its <pad>, <s>, </s>, <unk>)."""
    specials = {tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id}
    ids = (i for i in range(tokenizer.vocab_size) if i not in specials)
    path.write_text("".join(f"{i} 1\n" for i in ids), encoding="utf-8")


def export(work: Path, test_lines: int | None, overrides: list[str]) -> None:
    project = work / "project"
    paths = [f"paths.{key}={project}/{key}" for key in ("raw_dir", "cache_dir", "tokenizer_dir")]
    config = compose_config("train", [*paths, *overrides], TrainConfig)
    data = prepare_data(config)
    out = work / "text"
    out.mkdir(parents=True, exist_ok=True)
    src, tgt = config.data.source_lang, config.data.target_lang
    for split in ("train", "dev"):
        pairs = data.splits[split].select_columns(["src_ids", "tgt_ids"])
        with (
            open(out / f"{split}.{src}", "w", encoding="utf-8") as sources,
            open(out / f"{split}.{tgt}", "w", encoding="utf-8") as targets,
        ):
            for batch in pairs.iter(batch_size=10_000):
                sources.writelines(words(ids) + "\n" for ids in batch["src_ids"])
                targets.writelines(words(ids) + "\n" for ids in batch["tgt_ids"])
    write_dictionary(out / f"dict.{src}", data.src_tok)
    write_dictionary(out / f"dict.{tgt}", data.tgt_tok)

    test = data.splits["test"]
    if test_lines is not None:
        test = test.select(range(min(test_lines, len(test))))
    conventions = TextConventions.of_data(config.data)
    max_tokens = config.model.max_positions - 2  # room for the source's specials
    lines, pieces = [], []
    for text in test["src"]:
        sentences = source_sentences(text, data.src_tok, conventions, 0, max_tokens)
        lines.append(
            [
                {
                    "text": s.text,
                    "pieces": len(s.pieces),
                    "numbers": s.numbers,
                    "names": s.renderings,
                }
                for s in sentences
            ]
        )
        pieces += [words(ids) for s in sentences for ids in s.pieces]
    (out / f"test.{src}").write_text("".join(p + "\n" for p in pieces), encoding="utf-8")
    settings = {"target_lang": tgt, "conventions": conventions.__dict__, "lines": lines}
    (out / "test.json").write_text(json.dumps(settings, ensure_ascii=False), encoding="utf-8")
    (out / f"test.ref.{tgt}").write_text("".join(one_line(t) + "\n" for t in test["tgt"]))
    corpora = test[CORPUS_COLUMN] if CORPUS_COLUMN in test.column_names else [""] * len(test)
    (out / "test.corpus").write_text("".join(c + "\n" for c in corpora))
    data.tgt_tok.save(out / f"tokenizer.{tgt}.json")
    print(
        f"exported train {len(data.splits['train']):,}, dev {len(data.splits['dev']):,} pairs, "
        f"test {len(lines):,} lines in {len(pieces):,} pieces; vocabularies "
        f"{data.src_tok.vocab_size:,} + {data.tgt_tok.vocab_size:,} ids, hashes "
        f"{data.src_tok.hash[:12]} {data.tgt_tok.hash[:12]}"
    )


def restore(work: Path, hypotheses: Path) -> None:
    settings = json.loads((work / "text" / "test.json").read_text(encoding="utf-8"))
    conventions = TextConventions(**settings["conventions"])
    target_lang = settings["target_lang"]
    tgt_tok = BPETokenizer.load(work / "text" / f"tokenizer.{target_lang}.json")
    by_piece: dict[int, str] = {}
    for line in hypotheses.read_text(encoding="utf-8").splitlines():
        if match := _HYPOTHESIS.match(line):
            ids = [int(word) for word in match[2].split()]
            by_piece[int(match[1])] = one_line(tgt_tok.decode(ids))
    piece = 0
    for sentences in settings["lines"]:
        texts = []
        for sentence in sentences:
            parts = [by_piece.get(piece + k, "") for k in range(sentence["pieces"])]
            piece += sentence["pieces"]
            text = conventions.joiner.join(parts)
            if conventions.number_placeholders:
                text = restore_numbers(
                    text, sentence["numbers"], target_lang, conventions.number_digits
                )
            if conventions.name_placeholders:
                text = restore_names(text, sentence["names"])
            texts.append(repair_numbers(sentence["text"], text))
        print(conventions.joiner.join(texts))
    if piece != len(by_piece):
        sys.exit(f"{hypotheses}: {len(by_piece)} hypotheses for {piece} test pieces")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    exporting = commands.add_parser("export")
    exporting.add_argument("work", type=Path)
    exporting.add_argument("--test-lines", type=int)
    exporting.add_argument("overrides", nargs="*")
    restoring = commands.add_parser("restore")
    restoring.add_argument("work", type=Path)
    restoring.add_argument("hypotheses", type=Path)
    args = parser.parse_args()
    if args.command == "export":
        # The stages' own log lines (what was trained or loaded, what cleaning dropped).
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        datasets.disable_progress_bars()
        export(args.work, args.test_lines, args.overrides)
    else:
        restore(args.work, args.hypotheses)


if __name__ == "__main__":
    main()
