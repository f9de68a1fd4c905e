"""scripts/serve.py's command line: flags, `serving.KEY=VALUE` limits, one-line errors."""

from __future__ import annotations

import pytest

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.programs.arguments import UsageError
from llm_from_scratch.programs.serve import main, parse_args, serving_config


def test_settings_split_into_serving_limits_and_decoding_keys():
    args, settings = parse_args(
        ["--run", "smoke", "--port", "8001", "serving.max_texts=64", "decoding.length_penalty=1.4"]
    )
    assert (args.run, args.port, args.host) == ("smoke", 8001, "127.0.0.1")
    assert settings == {"serving": {"max_texts": "64"}, "decoding": {"length_penalty": "1.4"}}
    limits = serving_config(settings["serving"])
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
    ],
)
def test_a_bad_command_line_is_refused_before_the_model_loads(argv, error, message):
    # --checkpoint names no file: reaching the model would raise a CheckpointError instead.
    with pytest.raises(error, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        main([*argv, "--checkpoint", "/nonexistent/model.pt"])
