"""The committed everyday test list, and `evaluate --data everyday` scoring it."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import yaml

from llm_from_scratch.evaluation.fidelity import looping_outputs, number_fidelity
from llm_from_scratch.programs import evaluate as evaluate_cli
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.decoding.builders import save_tiny_checkpoint

ROOT = Path(__file__).resolve().parents[2]
EVERYDAY = ROOT / "tests" / "data" / "everyday"
SENTENCES = 100
NUMBERS = 40  # written in digits in everyday.en, in 30 of its lines (a phone number is one)


def read_lines(name: str) -> list[str]:
    return (EVERYDAY / name).read_text(encoding="utf-8").splitlines()


def test_the_list_is_aligned_and_its_references_keep_every_number():
    sources, references = read_lines("everyday.en"), read_lines("everyday.ja")
    assert len(sources) == len(references) == SENTENCES
    assert all(line.strip() == line and line for line in sources + references)
    assert len(set(sources)) == SENTENCES
    fidelity = number_fidelity(sources, references)
    assert (fidelity.source_numbers, fidelity.kept) == (NUMBERS, NUMBERS)
    assert looping_outputs(sources, references, "en", "ja") == []
    assert sum(len(line.split()) >= 25 for line in sources) >= 10  # long sentences
    assert sum(line.count("。") >= 2 for line in references) >= 8  # lines of several sentences


def test_the_config_names_the_committed_files():
    # The fetch checks these, so an edited file with a stale checksum fails every evaluation.
    config = yaml.safe_load((ROOT / "configs" / "data" / "everyday.yaml").read_text())
    for entry in config["files"]:
        data = (EVERYDAY / entry["name"]).read_bytes()
        assert (entry["bytes"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())


def test_evaluate_scores_the_everyday_list(tmp_path, capsys):
    tok = BPETokenizer.train(["the cat sat on the mat.", "猫がマットに座った。"], vocab_size=300)
    checkpoint = save_tiny_checkpoint(tmp_path / "best.pt", tok)
    # Without --output-dir the scores land beside the checkpoint, apart from its own data's
    # (the length limit set: a hash of the keys unlike the run's).
    status = evaluate_cli.main(
        [
            "--checkpoint",
            str(checkpoint),
            "--data",
            "everyday",
            "decoding=greedy",
            "decoding.max_len_b=2",  # an untrained model: keep its outputs short
            "decoding.max_len_a=0",
            f"paths.raw_dir={tmp_path / 'raw'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ]
    )
    assert status == 0
    (out,) = tmp_path.glob("eval-*")
    assert re.fullmatch(r"eval-everyday-test-beam1-[0-9a-f]{8}", out.name)
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["dataset"], metrics["sentences"]) == ("everyday", SENTENCES)
    hypotheses = (out / "hypotheses.txt").read_text(encoding="utf-8").splitlines()
    expected = number_fidelity(read_lines("everyday.en"), hypotheses).to_dict()
    assert metrics["number_fidelity"] == expected
    assert expected["source_numbers"] == NUMBERS
    loops = looping_outputs(read_lines("everyday.en"), hypotheses, "en", "ja")
    assert metrics["loops"] == len(loops)
    assert 0.0 <= metrics["chrf"] <= 100.0 and "tok:ja-mecab" in metrics["bleu_signature"]
    assert "numbers kept: " in capsys.readouterr().out
