"""One optimizer step's arithmetic: the trainer's update gives, bit for bit, the weights of the
update written out plainly (forward, the loss over the step's target tokens, backward, clipping,
AdamW, the schedule), and skips exactly the steps whose gradients are not finite, in bf16 and
through fp16's GradScaler."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from llm_from_scratch.training.loss import summed_cross_entropy
from llm_from_scratch.training.trainer import Trainer

from .test_trainer import with_trainer

STEPS = 8


def trainer_of(copy_task, tmp_path, precision: str) -> Trainer:
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    cfg = with_trainer(config, tmp_path, device="cpu", precision=precision, accumulation_steps=2)
    return Trainer(cfg, data)  # with dropout: its masks must come out the same too


def poisoned_forward(trainer: Trainer, poisoned: set[int], step) -> None:
    """The model's output is NaN in the updates whose 0-based number `step()` is in `poisoned`."""
    forward = trainer.model.forward

    def nan_at_poisoned_steps(*args):
        logits = forward(*args)
        return logits * float("nan") if step() in poisoned else logits

    trainer.model.forward = nan_at_poisoned_steps


def reference_steps(trainer: Trainer, poisoned: set[int]) -> None:
    """`STEPS` updates written out: an update with non-finite gradients leaves the weights and
    the optimizer's moments alone, and every update moves the schedule on."""
    training = trainer.config.training
    pad_id = trainer.data.tgt_tok.pad_id
    batches = trainer.batches()
    done: list[int] = []
    poisoned_forward(trainer, poisoned, lambda: len(done))
    for number in range(STEPS):
        group = next(batches).batches
        scale = 1 / sum(batch.tgt_tokens for batch in group)
        trainer.model.train()
        for batch in group:
            with trainer.precision.autocast():
                logits = trainer.model(batch.src, batch.src_mask, batch.tgt_in)
            loss = summed_cross_entropy(logits, batch.tgt_out, pad_id, training.label_smoothing)
            (loss * scale).backward()
        norm = torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), training.clip_norm)
        if torch.isfinite(norm):
            trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)
        trainer.scheduler.step()
        done.append(number)


def trainer_steps(trainer: Trainer, poisoned: set[int]) -> list[int]:
    """`STEPS` of the trainer's updates; the 0-based numbers of those it skipped."""
    batches = trainer.batches()
    stats = []
    poisoned_forward(trainer, poisoned, lambda: len(stats))
    for _ in range(STEPS):
        stats.append(trainer.update(next(batches)))
    return [number for number, step in enumerate(stats) if step.skipped]


def weights(trainer: Trainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in trainer.model.parameters()])


@pytest.mark.parametrize(
    ("precision", "poisoned"), [("fp32", set()), ("fp32", {2, 3, 6}), ("bf16", {1, 5})]
)
def test_the_update_is_the_plain_update_bit_for_bit(copy_task, tmp_path, precision, poisoned):
    trained = trainer_of(copy_task, tmp_path / "trainer", precision)
    assert trainer_steps(trained, poisoned) == sorted(poisoned)
    reference = trainer_of(copy_task, tmp_path / "reference", precision)
    reference_steps(reference, poisoned)
    assert torch.equal(weights(trained), weights(reference))
    assert trained.scheduler.last_epoch == reference.scheduler.last_epoch == STEPS


def test_fp16_loss_scaling_skips_the_non_finite_steps_and_backs_off(copy_task, tmp_path):
    """GradScaler's path as fp16 takes it on a GPU, run on the CPU in fp32: a power-of-two scale
    is exact, so the weights are the plain update's."""
    poisoned = {1, 4}
    initial_scale = 2.0**12
    trained = trainer_of(copy_task, tmp_path / "trainer", "fp32")
    trained.learner.scaler = torch.amp.GradScaler("cpu", init_scale=initial_scale)
    assert trainer_steps(trained, poisoned) == sorted(poisoned)
    assert trained.scaler.get_scale() == initial_scale / 2 ** len(poisoned)
    reference = trainer_of(copy_task, tmp_path / "reference", "fp32")
    reference_steps(reference, poisoned)
    assert torch.equal(weights(trained), weights(reference))
