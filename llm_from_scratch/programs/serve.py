"""`scripts/serve.py`: translate over HTTP: a web page at /, a JSON API at /api, its docs at /docs.

    serve.py                                    run `default`'s model on http://127.0.0.1:8000
    serve.py --run smoke --port 8001            another run's model, another port
    serve.py --checkpoint runs/x/best.pt --host 0.0.0.0    a checkpoint file, on every interface
                                                (docs/serving.md: what that exposes)
    serve.py --host 0.0.0.0 serving.allowed_hosts=mt.example.com   answer that name too
    serve.py serving.max_texts=64 serving.batch_wait_ms=10   the server's limits
    serve.py decoding.length_penalty=1.4        any key of the run's decoding config
    serve.py --engine ctranslate2               the run's CTranslate2 export (`make export`)

POST /api/translate {"texts": ["Hello."], "beam": 5, "nbest": 3, "attention": true} returns each
translation with its candidates and scores (and cross-attention); GET /api/health the model's
run, step and dev BLEU, and the limits. Requests that arrive together are decoded together.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from llm_from_scratch.errors import ConfigError, UserError
from llm_from_scratch.programs.arguments import Parser
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.model_choice import (
    add_model_arguments,
    decoding_overrides,
    load_translator,
    model_file,
)
from llm_from_scratch.schema import with_overrides
from llm_from_scratch.serving.config import ServingConfig


def main(argv: Sequence[str]) -> int:
    args, settings = parse_args(argv)
    limits = serving_config(settings)
    try:  # the `serve` extra: checked before the model loads, which takes a while
        import uvicorn

        from llm_from_scratch.serving.api import create_app
        from llm_from_scratch.serving.service import TranslationService
    except ModuleNotFoundError as missing:
        raise UserError(
            f"the server needs {missing.name}: install the serve extra (`make setup`, or "
            "`pip install -e '.[serve]'`)"
        ) from None
    decoding = decoding_overrides(args, settings)
    check_decoding(decoding, limits)
    model = model_file(args)
    decoder = None  # CTranslate2 decodes on its own threads, whichever thread calls it
    if args.engine == "torch":
        # All of torch's work on one thread, the model's loading (and precision probe) and every
        # decoding: torch decodes several times slower on a thread other than the one that ran
        # it first, whose OpenMP threads then compete with the second's (docs/serving.md).
        decoder = ThreadPoolExecutor(1, thread_name_prefix="decode")
        translator, _ = decoder.submit(load_translator, model, args, decoding).result()
    else:
        translator, _ = load_translator(model, args, decoding)
    if translator.decode.beam_size > limits.max_beam:
        raise ConfigError(
            f"the model decodes with beam {translator.decode.beam_size} (its run's "
            f"decoding.beam_size), over serving.max_beam={limits.max_beam}: every request "
            "without a beam would be refused; pass --beam N or raise serving.max_beam"
        )
    service = TranslationService(translator, run=None if args.checkpoint else args.run)
    app = create_app(service, limits, decoder, host=args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, str]]:
    """The flags, and the `serving` and `decoding` settings."""
    return _parser().parse(argv)


def serving_config(settings: dict[str, str]) -> ServingConfig:
    """The defaults with the `serving.KEY=VALUE` settings applied, converted to their types and
    validated."""
    prefix = "serving."
    overrides = {k.removeprefix(prefix): v for k, v in settings.items() if k.startswith(prefix)}
    return with_overrides(ServingConfig(), overrides, "serving")


def check_decoding(decoding: dict[str, Any], limits: ServingConfig) -> None:
    """Refuse, before the model loads, decoding keys of bad values and a beam over the limit a
    request has (`serving.max_beam`), which would refuse every request that asks for none."""
    from llm_from_scratch.decoding.config import DecodingConfig

    checked = with_overrides(DecodingConfig(beam_size=limits.max_beam), decoding, "decoding")
    if "beam_size" in decoding and checked.beam_size > limits.max_beam:
        raise ConfigError(
            f"beam {checked.beam_size} (--beam or decoding.beam_size) is over serving.max_beam="
            f"{limits.max_beam}, the largest a request may ask for: lower it, or raise "
            "serving.max_beam"
        )


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1 to 65535)")
    return port


def _parser() -> Parser:
    parser = Parser("serve.py", __doc__, groups=["serving", "decoding"])
    parser.add_argument(
        "words",
        nargs="*",
        metavar="KEY=VALUE",
        help="serving.KEY=VALUE sets a limit of the server, decoding.KEY=VALUE a decoding key",
    )
    add_model_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=_port, default=8000, help="port (default: 8000)")
    return parser


def run() -> None:
    """`scripts/serve.py`."""
    run_main(main)
