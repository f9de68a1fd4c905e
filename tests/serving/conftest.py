"""Fixtures of the server's tests: a tiny checkpoint (an untrained `model=tiny`, its outputs run
to their length limit), a service over it, and the app's TestClient."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.serving.api import create_app
from llm_from_scratch.serving.config import ServingConfig
from llm_from_scratch.serving.service import TranslationService
from tests.decoding.builders import save_run_checkpoint, tiny_tokenizer

STEP, DEV_BLEU, AVERAGED = 120, 3.4, 2  # what the tiny checkpoint says of itself
# Where the test clients send their requests: a name the app, bound to loopback, answers.
LOCAL = "http://localhost"


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """The tiny model gains nothing from threads, which on a busy machine only wait for cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("run") / "averaged.pt"
    return save_run_checkpoint(path, tiny_tokenizer(), STEP, {"bleu": DEV_BLEU}, AVERAGED)


@pytest.fixture
def service(checkpoint: Path) -> TranslationService:
    # The tiny model runs most outputs to their length limit: searched whole, not in halves
    # (decoding.split_runaways), each sentence is one piece and keeps its attention.
    translator = Translator.from_checkpoint(checkpoint, device="cpu", split_runaways=False)
    return TranslationService(translator, run="tiny")


@pytest.fixture
def client(service: TranslationService) -> Callable[..., TestClient]:
    """A TestClient of the app with the given limits; the app's lifespan (its batching worker)
    runs while the client is open."""
    clients = []

    def _client(**limits: object) -> TestClient:
        opened = TestClient(
            create_app(service, ServingConfig(**limits)),
            raise_server_exceptions=False,
            base_url=LOCAL,
        )
        clients.append(opened.__enter__())
        return opened

    yield _client
    for opened in clients:
        opened.__exit__(None, None, None)
