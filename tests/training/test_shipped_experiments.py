"""Every shipped experiment starts from nothing: a time-budgeted run of each `configs/experiment/`
file, from an empty `data/raw` and a mirror of small files laid out as the real corpora are, fetches
its corpora, plans, prepares its data and makes its first updates.

The runs keep the order a user's run takes (fetch, plan, prepare, train); only what makes a CPU
step slow is turned down (batches, sentence lengths, sentences translated, threads),
and a model bigger than the CPU default is swapped for model=tiny, chosen as a command would.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import load_checkpoint
from llm_from_scratch.data.config import CorpusSource
from llm_from_scratch.data.sources import dataset_dir
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.paths import RunDir
from llm_from_scratch.programs import train as program
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.plan import Choices
from tests.data.fixture_mirror import PAIRS, fixture_pairs, without_checksums, write_fixture_mirror

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
EXPERIMENTS = sorted(path.stem for path in (CONFIGS / "experiment").glob("*.yaml"))
MAX_STEPS = 2
# What a CPU step of these runs costs, turned down; none of it changes what the run fetches,
# plans or prepares, nor the order it does so in.
QUICK = [
    f"training.max_steps={MAX_STEPS}",
    "training.device=cpu",
    "training.threads=1",  # the runs are tiny: a second thread only waits on a busy machine
    "training.dev_bleu_sentences=4",
    "data.loading.batch_tokens=512",
    "data.cleaning.max_tokens=32",
]
PLANNER_LOGGER = "llm_from_scratch.training.budget"
FETCH_LOGGER = "llm_from_scratch.data.sources"


@pytest.fixture(autouse=True)
def restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def composed(*overrides: str) -> tuple[TrainConfig, bool]:
    """`configs/train.yaml` with QUICK's overrides and `overrides`, and whether the command chose
    the model: Transformer base's steps take seconds each on a CPU, so a model bigger than the
    CPU default is replaced by model=tiny."""
    config = compose_config("train", [*QUICK, *overrides], TrainConfig)
    too_big = config.model.d_model > ModelConfig().d_model and config.training.init_from is None
    if too_big:
        config = compose_config("train", [*QUICK, *overrides, "model=tiny"], TrainConfig)
    return config, too_big


def on_fixture_mirror(config: TrainConfig, mirror: Path) -> TrainConfig:
    """`config` reading its corpora from `mirror`, which gets a fixture copy of each."""
    write_fixture_mirror(config.data.members, mirror)
    return dataclasses.replace(config, data=without_checksums(config.data, mirror))


def fetched_names(member: CorpusSource) -> list[str]:
    """What fetching `member` leaves in its raw directory."""
    if member.source == "hub":
        return ["dataset_dict.json"]
    if member.source == "archive":
        return member.corpus.file_names
    return [file.name for file in member.files] or member.corpus.file_names


def make_parent(root: Path, mirror: Path) -> Path:
    """A tiny step-budget run of the default data in `root`: a parent for experiment=finetune;
    its run directory."""
    config, _ = composed(
        f"paths.root={root}", "name=parent", "model=tiny", "training.max_time=null",
        "training.short_run=null",
    )  # fmt: skip
    assert program.train(on_fixture_mirror(config, mirror), chosen=Choices(model=True))
    return Path(config.run_dir.root)


def write_extra_train(config: TrainConfig) -> None:
    """The translations `data.extra_train` names, as the teacher's `make eval` would write them:
    one line for each line of the fixture's train split."""
    for extra in config.data.extra_train:
        target = Path(extra.target)
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = [japanese for _, japanese in fixture_pairs("extra", "train", PAIRS["train"])]
        target.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")  # *_gpu's workers
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_a_time_budgeted_run_of_each_experiment_starts_from_an_empty_raw_dir(
    experiment, tmp_path, monkeypatch, caplog
):
    mirror, root = tmp_path / "mirror", tmp_path / "root"
    monkeypatch.setenv("DATA_MIRROR", str(mirror))
    overrides = [f"experiment={experiment}", f"paths.root={root}", "training.max_time=10m"]
    if compose_config("train", overrides, TrainConfig).training.init_from is not None:
        parent = make_parent(tmp_path / "parent", mirror)
        overrides.append(f"training.init_from={parent}")
    config, model_chosen = composed(*overrides)
    config = on_fixture_mirror(config, mirror)
    write_extra_train(config)
    raw_dir = Path(config.paths.raw_dir)
    assert not raw_dir.exists()
    caplog.clear()

    with caplog.at_level(logging.INFO):
        # `training.max_steps` caps the budget as it does when a command line sets it.
        metrics = program.train(config, chosen=Choices(model=model_chosen, max_steps=True))

    loggers = [record.name for record in caplog.records]
    planned = [i for i, name in enumerate(loggers) if name.startswith(PLANNER_LOGGER)]
    fetched = [
        i
        for i, record in enumerate(caplog.records)
        if record.name == FETCH_LOGGER and record.getMessage().startswith("fetching ")
    ]
    assert planned, "the planner logged no plan"
    assert len(fetched) == len(config.data.members)
    assert max(fetched) < min(planned), "the run planned before it fetched its corpora"
    for member in config.data.members:
        directory = dataset_dir(member, config.paths)
        assert all((directory / name).is_file() for name in fetched_names(member)), member.name
    last = load_checkpoint(RunDir.of(config.paths, config.name).last)
    assert 1 <= last["progress"]["step"] <= MAX_STEPS
    assert metrics and math.isfinite(metrics["loss"])
