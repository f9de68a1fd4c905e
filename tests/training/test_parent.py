"""Fine-tuning from a checkpoint (`training.init_from`): the parent's weights, tokenizers and
shape, a fresh optimizer and schedule, the lineage in every checkpoint, and the refusals."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import torch

from llm_from_scratch.checkpoint import CheckpointSummary, load_checkpoint
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.programs.train import with_parent
from llm_from_scratch.schema import to_schema
from llm_from_scratch.training.parent import ParentError, adopt_parent, read_parent
from llm_from_scratch.training.trainer import Trainer
from tests.training.test_trainer import Run, fp32, run_trainer


@pytest.fixture(scope="module")
def parent_run(copy_task, tmp_path_factory):
    """A run of a few steps on the copy task, whose best.pt a child starts from."""
    config, data, _ = copy_task
    run_dir = tmp_path_factory.mktemp("runs") / "parent"
    config = fp32(config, run_dir, max_steps=4, save_every=4, keep_snapshots=0)
    trainer = Trainer(config, data)
    for _ in range(4):  # the loop's updates, without its validations (slow for a test)
        trainer.update(next(trainer.batches()))
        trainer.progress.step += 1
    trainer.save(trainer.run_dir.last)
    trainer.save(trainer.run_dir.best, {"bleu": 1.0})
    return config, run_dir


def child(config, run_dir, parent_path, **training):
    """`config` as a new run in `run_dir` started from `parent_path`."""
    changes = {"max_steps": 2, "eval_every": 2, "save_every": 2, "keep_snapshots": 0}
    return fp32(config, run_dir, init_from=str(parent_path), **{**changes, **training})


def test_a_parent_is_read_with_its_hash_step_and_tokenizers(parent_run):
    _, run_dir = parent_run
    path = run_dir / "best.pt"
    parent = read_parent(str(path), run_dir.parent)
    assert parent.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert parent.step == 4
    state = load_checkpoint(path)
    assert (parent.src_tok.hash, parent.tgt_tok.hash) == tuple(state["tokenizer_hashes"].values())
    # `run:NAME` and the run directory name its final model (here best.pt: no averages)
    assert read_parent("run:parent", run_dir.parent).path == path.resolve()
    assert read_parent(str(run_dir), run_dir.parent).sha256 == parent.sha256


@pytest.mark.slow  # importing transformers and exporting take seconds
def test_a_transformers_export_is_a_parent_with_the_checkpoints_weights(parent_run, tmp_path):
    pytest.importorskip("transformers")
    from llm_from_scratch.export.transformers_model import export_to_transformers

    _, run_dir = parent_run
    checkpoint = load_checkpoint(run_dir / "best.pt")
    folder = export_to_transformers(run_dir / "best.pt", tmp_path / "hf").directory
    parent = read_parent(str(folder), tmp_path)
    assert parent.path == folder.resolve()
    weights = (folder / "model.safetensors").read_bytes()
    assert parent.sha256 == hashlib.sha256(weights).hexdigest()
    assert parent.step == 4
    assert (parent.src_tok.hash, parent.tgt_tok.hash) == tuple(
        checkpoint["tokenizer_hashes"].values()
    )
    assert parent.model == to_schema(checkpoint["config"]["model"], ModelConfig)
    for name, tensor in checkpoint["model"].items():
        assert torch.equal(parent.weights[name], tensor), name


def test_a_ctranslate2_export_and_a_missing_file_are_refused_with_the_reason(tmp_path):
    export = tmp_path / "ctranslate2"
    export.mkdir()
    (export / "manifest.json").write_text(json.dumps({"format": "llm-from-scratch-ctranslate2"}))
    with pytest.raises(ParentError, match=r"is a CTranslate2 export, which cannot be trained"):
        read_parent(str(export), tmp_path)
    with pytest.raises(ParentError, match=r"nothing\.pt does not exist"):
        read_parent(str(tmp_path / "nothing.pt"), tmp_path)


def test_the_child_takes_the_parents_shape_and_tokenizers_and_refuses_to_change_them(
    parent_run,
):
    config, run_dir = parent_run
    parent = read_parent(str(run_dir / "best.pt"), run_dir.parent)
    default = dataclasses.replace(
        config,
        model=dataclasses.replace(config.model, d_model=64, n_encoder_layers=3, dropout=0.3),
        tokenizer=dataclasses.replace(config.tokenizer, vocab_size=8000),
    )
    adopted = adopt_parent(default, parent, chosen={"model.dropout"})
    assert adopted.model == dataclasses.replace(parent.model, dropout=0.3)  # dropout: the run's
    assert adopted.tokenizer == parent.tokenizer
    with pytest.raises(ParentError) as error:
        adopt_parent(default, parent, chosen={"model.d_model"})
    assert str(error.value).startswith("model.d_model=64 would change the parent's model (32 in")
    with pytest.raises(ParentError, match=r"^model\.d_model=64 would change"):
        adopt_parent(default, parent, chosen={"model"})  # model=NAME: every key it sets
    with pytest.raises(ParentError, match=r"^tokenizer\.vocab_size=8000 would change the parent"):
        adopt_parent(default, parent, chosen={"tokenizer.vocab_size"})


def test_the_program_refuses_a_shape_the_command_line_or_an_experiment_changes(parent_run):
    config, run_dir = parent_run
    parent_path = run_dir / "best.pt"
    wider = dataclasses.replace(config.model, d_model=64)  # not the defaults' (small's) value
    with pytest.raises(ParentError, match=r"^model\.d_model=64 would change"):
        with_parent(child(dataclasses.replace(config, model=wider), run_dir, parent_path))
    # n_heads=4 is the defaults' value: refused only where the command line sets it
    heads = child(dataclasses.replace(config, model=dataclasses.replace(config.model, n_heads=4)),
                  run_dir, parent_path)  # fmt: skip
    assert with_parent(heads)[0].model.n_heads == 2  # the parent's
    with pytest.raises(ParentError, match=r"^model\.n_heads=4 would change the parent's model \(2"):
        with_parent(heads, ["model.n_heads=4"])


def test_data_the_parents_tokenizers_do_not_fit_is_refused(parent_run):
    config, run_dir = parent_run
    parent = read_parent(str(run_dir / "best.pt"), run_dir.parent)
    reversed_data = dataclasses.replace(config.data, direction="ja-en")
    with pytest.raises(ParentError, match=r"^data\.direction: this run translates ja-en"):
        adopt_parent(dataclasses.replace(config, data=reversed_data), parent, ())
    masked = dataclasses.replace(config.data, number_placeholders=True)
    with pytest.raises(ParentError, match=r"source tokenizer .* has no token for 8 placeholder"):
        adopt_parent(dataclasses.replace(config, data=masked), parent, ())


def started_child(parent_run, copy_task, tmp_path):
    """The trainer of a new run in `tmp_path/child` from the parent's best.pt, as it starts."""
    config, run_dir = parent_run
    _, data, _ = copy_task
    started, parent = with_parent(child(config, tmp_path / "child", run_dir / "best.pt"))
    return Trainer(started, data, parent=parent), parent


def test_a_child_starts_from_the_parents_weights_with_a_fresh_optimizer_and_schedule(
    parent_run, copy_task, tmp_path
):
    trainer, parent = started_child(parent_run, copy_task, tmp_path)
    for name, weight in trainer.model.state_dict().items():
        assert torch.equal(weight, parent.weights[name]), name
    assert trainer.progress.step == 0 and not trainer.optimizer.state
    assert trainer.scheduler.last_epoch == 0
    parent_lr = load_checkpoint(parent_run[1] / "last.pt")["scheduler"]["_last_lr"][0]
    assert trainer.scheduler.get_last_lr()[0] != parent_lr


def test_the_childs_checkpoints_record_their_parent_and_translate_shows_it(
    parent_run, copy_task, tmp_path
):
    trainer, parent = started_child(parent_run, copy_task, tmp_path)
    trainer.save(trainer.run_dir.best, {"bleu": 2.0})
    state = load_checkpoint(tmp_path / "child" / "best.pt")
    assert state["parent"] == {"path": str(parent.path), "sha256": parent.sha256, "step": 4}
    summary = str(CheckpointSummary.of(state, "best.pt"))
    assert summary.endswith(f"fine-tuned from {parent.path} (step 4, sha256 {parent.sha256[:12]}))")


@pytest.mark.slow  # a run's validations and final scoring
def test_a_fine_tuned_run_trains_and_resumes_with_its_lineage(parent_run, copy_task, tmp_path):
    config, run_dir = parent_run
    _, data, _ = copy_task
    started, parent = with_parent(child(config, tmp_path / "child", run_dir / "best.pt"))
    Run(started, data, parent=parent).fit()
    lineage = {"path": str(parent.path), "sha256": parent.sha256, "step": 4}
    for name in ("last.pt", "best.pt"):
        state = load_checkpoint(tmp_path / "child" / name)
        assert state["parent"] == lineage, name
    assert load_checkpoint(tmp_path / "child" / "last.pt")["progress"]["step"] == 2  # from 0
    resumed = run_trainer(started, data)  # from its last.pt, which keeps the lineage
    assert resumed.lineage == lineage and resumed.progress.step == 2


@pytest.mark.slow  # a run's validations and final scoring
def test_a_fine_tuning_scores_its_parent_first_and_keeps_it_where_no_step_beats_it(
    parent_run, copy_task, tmp_path, caplog
):
    """Step 0's validation is the parent's dev score: at a learning rate of 1e-12 no step changes
    a greedy output, so none beats it and best.pt, the final model, holds the parent's weights."""
    config, run_dir = parent_run
    _, data, _ = copy_task
    started, parent = with_parent(child(config, tmp_path / "child", run_dir / "best.pt", lr=1e-12))
    run = Run(started, data, parent=parent)
    with caplog.at_level("INFO"):
        run.fit()
    assert "step 0/2 | dev loss" in caplog.text and "step 2/2 | dev loss" in caplog.text
    assert run.final.description.startswith("the best dev BLEU, step 0: the parent's weights")
    best = load_checkpoint(tmp_path / "child" / "best.pt")
    assert best["progress"]["step"] == 0 and best["progress"]["best_step"] == 0
    for name, weight in best["model"].items():
        assert torch.equal(weight, parent.weights[name]), name
