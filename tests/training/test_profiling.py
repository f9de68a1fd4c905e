"""training.profile_steps: a trace of a few steps, and a run that trains as it would unprofiled."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
import torch

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.profiling import DATA_RANGE, SKIPPED_STEPS, UPDATE_RANGE
from llm_from_scratch.training.trainer import Trainer
from tests.training.test_trainer import fp32


def trained_weights(config, data, run_dir, **changes) -> torch.Tensor:
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    trainer = Trainer(fp32(config, run_dir, eval_every=1000, save_every=1000, **changes), data)
    trainer.fit()
    return torch.cat([p.detach().flatten() for p in trainer.model.parameters()])


@pytest.mark.slow
def test_a_profiled_run_writes_its_trace_and_trains_as_an_unprofiled_one(
    copy_task, tmp_path, caplog
):
    config, data, _ = copy_task
    steps = SKIPPED_STEPS + 4
    plain = trained_weights(config, data, tmp_path / "plain", max_steps=steps)
    with caplog.at_level(logging.INFO, logger="llm_from_scratch.training.profiling"):
        profiled = trained_weights(
            config, data, tmp_path / "profiled", max_steps=steps, profile_steps=3
        )
    torch.testing.assert_close(profiled, plain, atol=0, rtol=0)
    assert not (tmp_path / "plain" / "profile").exists()

    profile = tmp_path / "profiled" / "profile"
    trace = json.loads((profile / "trace.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert {DATA_RANGE, UPDATE_RANGE} <= names
    steps_traced = {name for name in names if str(name).startswith("ProfilerStep#")}
    assert steps_traced == {f"ProfilerStep#{n}" for n in range(SKIPPED_STEPS, SKIPPED_STEPS + 3)}
    summary = (profile / "summary.txt").read_text()
    assert UPDATE_RANGE in summary and "aten::" in summary
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("profiled")]
    assert line.startswith("profiled 3 steps: ") and " update " in line and " data " in line


def test_profile_steps_must_not_be_negative():
    with pytest.raises(ConfigError, match=r"training\.profile_steps"):
        TrainingConfig(profile_steps=-1)
