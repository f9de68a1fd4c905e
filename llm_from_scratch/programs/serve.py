"""`scripts/serve.py`: translate over HTTP: a web page at /, a JSON API at /api, its docs at /docs.

    serve.py                                    run `default`'s model on http://127.0.0.1:8000
    serve.py --run smoke --port 8001            another run's model, another port
    serve.py --checkpoint runs/x/best.pt --host 0.0.0.0    a checkpoint file, on every interface
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

from llm_from_scratch.errors import UserError
from llm_from_scratch.programs.arguments import (
    Parser,
    UsageError,
    add_model_arguments,
    override,
    parser_from_doc,
    refuse_flag_key,
    refuse_unknown_option,
)
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.translate import load_translator
from llm_from_scratch.schema import with_overrides
from llm_from_scratch.serving.config import ServingConfig
from llm_from_scratch.serving.service import TranslationService

GROUPS = ("serving", "decoding")  # the config groups KEY=VALUE may set


def main(argv: Sequence[str]) -> int:
    args, settings = parse_args(argv)
    limits = serving_config(settings["serving"])
    try:  # the `serve` extra: checked before the model loads, which takes a while
        import uvicorn

        from llm_from_scratch.serving.api import create_app
    except ModuleNotFoundError as missing:
        raise UserError(
            f"the server needs {missing.name}: install the serve extra (`make setup`, or "
            "`pip install -e '.[serve]'`)"
        ) from None
    decoder = None  # CTranslate2 decodes on its own threads, whichever thread calls it
    if args.engine == "torch":
        # All of torch's work on one thread, the model's loading (and precision probe) and every
        # decoding: torch decodes several times slower on a thread other than the one that ran
        # it first, whose OpenMP threads then compete with the second's (docs/serving.md).
        decoder = ThreadPoolExecutor(1, thread_name_prefix="decode")
        translator = decoder.submit(load_translator, args, settings["decoding"]).result()
    else:
        translator = load_translator(args, settings["decoding"])
    service = TranslationService(translator, run=None if args.checkpoint else args.run)
    app = create_app(service, limits, decoder)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, dict[str, str]]]:
    """The flags, and the KEY=VALUE settings as {group: {key: value}}."""
    parser = _parser()
    args, unknown = parser.parse_known_intermixed_args(argv)
    for arg in unknown:
        refuse_unknown_option(arg, parser.prog)
    settings: dict[str, dict[str, str]] = {group: {} for group in GROUPS}
    for arg in args.settings:
        refuse_flag_key(arg)
        parsed = override(arg)
        group, _, key = parsed[0].partition(".") if parsed else ("", "", "")
        if not parsed or group not in GROUPS or not key:
            raise UsageError(f"{arg!r} is not serving.KEY=VALUE or decoding.KEY=VALUE")
        settings[group][key] = parsed[1]
    return args, settings


def serving_config(overrides: dict[str, str]) -> ServingConfig:
    """The defaults with `overrides` applied, converted to their types and validated."""
    return with_overrides(ServingConfig(), overrides, "serving")


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1 to 65535)")
    return port


def _parser() -> Parser:
    parser = parser_from_doc(Parser, "serve.py", __doc__)
    parser.add_argument(
        "settings",
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
