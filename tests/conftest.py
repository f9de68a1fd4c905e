"""Shared fixtures: Hydra composition of the project's configs, the corpus mirror."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from llm_from_scratch.device import set_threads, usable_cores
from llm_from_scratch.programs.train import TrainConfig
from tests.composing import composed, composed_train


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (`make test` runs one worker a core), each worker and the programs it
    starts take their share of the cores: more threads would only wait for the other workers'."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        share = max(1, usable_cores() // workers)
        os.environ["OMP_NUM_THREADS"] = str(share)
        set_threads(None)  # the project's own reading of OMP_NUM_THREADS


@pytest.fixture
def compose_config() -> Callable[..., DictConfig]:
    """Compose `configs/<name>.yaml` with overrides, as the scripts do: `compose_config("train",
    ["model=tiny"])` (each composition made once per test process: tests/composing.py)."""
    return composed


@pytest.fixture
def train_config() -> Callable[..., TrainConfig]:
    """The validated `TrainConfig` that `configs/train.yaml` composes into with these overrides,
    as `scripts/train.py` would run it: `train_config("experiment=kftt", "model=base")`."""
    return composed_train


@pytest.fixture
def corpus_mirror() -> Path:
    """The corpus directory `DATA_MIRROR` names (CI sets it); tests needing it skip without."""
    mirror = os.environ.get("DATA_MIRROR")
    if not mirror or not Path(mirror).is_dir():
        pytest.skip("DATA_MIRROR is not set to a corpus directory")
    return Path(mirror).resolve()


# A few entries of each name dictionary in its installed form (EDICT lines in EUC-JP): the tests
# read these, never the system's files, whose table takes seconds to build.
ENAMDICT_LINES = [
    "\u3000？？？ /ENAMDICT - Japanese Proper Name Dictionary File/",
    "バイデン /(s) Biden/(s) Weyden/",
    "ジョージ・フロイド /(h) George Floyd/",
    "ジョージ /(m) George/",
    "安倍 [あべ] /(p,s) Abe/",
    "阿部 [あべ] /(p,s) Abe/",
    "エイブ /(s) Abe/",
    "あべ /(u) Abe/",
    "タミル・ナド /(p) Tamil Nadu/",
    "タミルナードゥ /(p) Tamil Nadu/",
    "タミル /(p) Tamil (India)/",
    "ナサ /(u) NASA/",
    "ホワイトハウス /(p) White House/",
    "ターリバーン /(o) Taliban/",
    "タリバン /(o) Taliban/",
    # A name of dev and one of test for the transliteration corpus (data/name_pairs.py's hash).
    "ターナー /(s) Turner/",
    "パーカー /(s) Parker/",
]
EDICT_LINES = [
    "\u3000？？？ /EDICT, EDICT_SUB(P), EDICT2 Japanese-English Electronic Dictionary Files/",
    "コロナウイルス /(n) coronavirus/(P)/",
    "サンデー /(n) Sunday/",
    "日曜日 [にちようび] /(n) Sunday/(P)/",
]


@pytest.fixture(autouse=True)
def name_dictionary_files(tmp_path_factory, monkeypatch) -> tuple[Path, Path]:
    """The name dictionary every test reads (name_dictionary.py), cached in a folder of
    the test session's."""
    from llm_from_scratch import name_dictionary

    folder = tmp_path_factory.getbasetemp() / "edict"
    files = (folder / "enamdict", folder / "edict")
    if not folder.is_dir():
        folder.mkdir()
        for path, lines in zip(files, (ENAMDICT_LINES, EDICT_LINES), strict=True):
            path.write_bytes("".join(f"{line}\n" for line in lines).encode("euc_jp"))
    monkeypatch.setattr(name_dictionary, "DICTIONARY_FILES", files)
    monkeypatch.setattr(name_dictionary, "DEFAULT_CACHE_DIR", folder / "cache")
    return files
