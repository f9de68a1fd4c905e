"""training.threads: torch's CPU threads, by default the cores the process may use; a warning
when the load average and the threads running now say other processes keep those cores busy."""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

from llm_from_scratch import device
from llm_from_scratch.device import contention, running_elsewhere, set_threads, usable_cores
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.programs import train as program
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.training.config import TrainingConfig
from tests.data.fixture_mirror import without_checksums, write_fixture_mirror


@pytest.fixture(autouse=True)
def restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_threads_default_to_omp_num_threads_else_the_usable_cores(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert set_threads(None) == torch.get_num_threads() == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert usable_cores() == 3
    assert set_threads(None) == torch.get_num_threads() == 3
    assert set_threads(2) == torch.get_num_threads() == 2


def test_a_busy_machine_is_named_in_a_warning(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (2.1, 1.0, 0.5))
    monkeypatch.setattr(device, "running_elsewhere", lambda: 2)
    warning = contention(2)
    assert warning is not None and warning.startswith(
        "the load average is 2.1 and 2 other thread(s) run now on the 2 cores this process may "
        "use: another process is busy"
    )
    assert "set training.threads lower" in warning
    monkeypatch.setattr(device, "running_elsewhere", lambda: 0)
    assert contention(2) is None  # the load of a job that has just ended
    monkeypatch.setattr(device, "running_elsewhere", lambda: None)  # no count: the load decides
    assert contention(2).startswith("the load average is 2.1 on the 2 cores")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 1.0, 0.5))
    assert contention(2) is None  # an idle machine
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 0.5))
    assert contention(1) is None  # one busy core, one thread: room for both


def test_the_threads_running_now_are_read_from_the_kernels_count(tmp_path, monkeypatch):
    monkeypatch.setattr(device, "RUNNABLE_INTERVAL", 0.0)
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("2.10 1.00 0.50 3/120 999\n")  # the reader is one of the 3
    assert running_elsewhere(loadavg) == 2
    loadavg.write_text("0.10 0.30 0.50 1/120 999\n")
    assert running_elsewhere(loadavg) == 0
    assert running_elsewhere(tmp_path / "absent") is None


def test_threads_must_be_positive():
    assert TrainingConfig(threads=3).threads == 3
    with pytest.raises(ConfigError, match=r"training\.threads=0 must be at least 1"):
        TrainingConfig(threads=0)


def test_the_train_program_sets_them_and_warns_where_training_starts(tmp_path, monkeypatch, caplog):
    config = compose_config(
        "train", ["experiment=smoke", "training.threads=3", f"paths.root={tmp_path}"],
        program.TrainConfig,
    )  # fmt: skip
    # The planner reads the fetched corpus before the data is prepared: a fixture mirror of it,
    # so that the test needs neither DATA_MIRROR nor a network.
    write_fixture_mirror(config.data.members, tmp_path / "mirror")
    config = dataclasses.replace(config, data=without_checksums(config.data, tmp_path / "mirror"))

    class Prepared(Exception):
        """Raised where the data would be prepared: the threads are set by then."""

    def prepare_data(config, parent=None, raw_dirs=None):
        raise Prepared

    monkeypatch.setattr(program, "prepare_data", prepare_data)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    monkeypatch.setattr(device, "running_elsewhere", lambda: 8)
    with caplog.at_level("WARNING"), pytest.raises(Prepared):
        program.train(config)
    assert torch.get_num_threads() == 3
    assert "the load average is 9.0" in caplog.text
