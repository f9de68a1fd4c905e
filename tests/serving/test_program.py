"""scripts/serve.py's command line: flags, `serving.KEY=VALUE` limits, one-line errors."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.programs import serve
from llm_from_scratch.programs.arguments import UsageError
from llm_from_scratch.programs.serve import main, parse_args, serving_config
from llm_from_scratch.serving.service import TranslationService
from tests.serving.conftest import LOCAL


def test_settings_split_into_serving_limits_and_decoding_keys():
    args, settings = parse_args(
        ["--run", "smoke", "--port", "8001", "serving.max_texts=64", "decoding.length_penalty=1.4"]
    )
    assert (args.run, args.port, args.host) == ("smoke", 8001, "127.0.0.1")
    assert settings == {"serving.max_texts": "64", "decoding.length_penalty": "1.4"}
    limits = serving_config(settings)
    assert limits.max_texts == 64 and isinstance(limits.max_texts, int)


@pytest.mark.parametrize(
    ("argv", "error", "message"),
    [
        (["serving.max_texts=0"], ConfigError, "serving.max_texts=0 must be at least 1"),
        (["serving.batch_wait_ms=-1"], ConfigError, "serving.batch_wait_ms=-1.0 must be at least"),
        (["serving.speed=2"], ConfigError, "serving.speed is not a serving setting; they are"),
        (["serving.max_chars=many"], ConfigError, "serving.max_chars=many: Value 'many' of"),
        (["model.d_model=8"], UsageError, "'model.d_model=8' is not serving.KEY=VALUE or"),
        (["Hello."], UsageError, "'Hello.' is not serving.KEY=VALUE or decoding.KEY=VALUE"),
        (["checkpoint=x.pt"], UsageError, "write `--checkpoint x.pt`"),
        (["--port", "70000"], UsageError, "argument --port: 70000 is not a port"),
        (["--beam", "11"], ConfigError, "beam 11 (--beam or decoding.beam_size) is over serving"),
        (["decoding.beam_size=3", "serving.max_beam=2"], ConfigError, "beam 3 (--beam or"),
        (["decoding.nbest=11"], ConfigError, "decoding.nbest=11 must be between 1 and"),
        (["decoding.length_penalty=-1"], ConfigError, "decoding.length_penalty=-1.0 must be"),
        (["serving.allowed_hosts=a.example:80"], ConfigError, "serving.allowed_hosts: 'a.exam"),
        (["serving.max_tokens=0"], ConfigError, "serving.max_tokens=0 must be at least 1"),
    ],
)
def test_a_bad_command_line_is_refused_before_the_model_loads(argv, error, message):
    # --checkpoint names no file: reaching the model would raise a CheckpointError instead.
    with pytest.raises(error, match="^" + re.escape(message)):
        main([*argv, "--checkpoint", "/nonexistent/model.pt"])


def test_the_model_loads_and_decodes_on_one_thread_other_than_the_event_loops(
    checkpoint: Path, monkeypatch
):
    # Torch decodes several times slower on a thread other than the one that ran it first.
    threads: dict[str, int] = {}
    load_translator, translate = serve.load_translator, TranslationService.translate

    def loading(*args):
        threads["load"] = threading.get_ident()
        return load_translator(*args)

    def translating(self, *args):
        threads["decode"] = threading.get_ident()
        return translate(self, *args)

    def serving(app: FastAPI, **_: object) -> None:
        with TestClient(app, base_url=LOCAL) as client:
            assert client.post("/api/translate", json={"texts": ["hello ."]}).status_code == 200

    monkeypatch.setattr(serve, "load_translator", loading)
    monkeypatch.setattr(TranslationService, "translate", translating)
    monkeypatch.setattr(uvicorn, "run", serving)
    assert main(["--checkpoint", str(checkpoint), "decoding.max_len_b=1"]) == 0
    assert threads["load"] == threads["decode"] != threading.get_ident()
