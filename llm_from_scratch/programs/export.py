"""`scripts/export.py`: write a run's model for another inference engine (CTranslate2).

    export.py --format ctranslate2                 runs/default's model to runs/default/ctranslate2/
    export.py --quantization int8                  int8 weights (float32 elsewhere)
    export.py --checkpoint runs/x/best.pt --output /srv/model --force

The directory holds CTranslate2's model files, both tokenizers and manifest.json (run, step, dev
BLEU, quantization, tokenizer hashes, the run's config): it translates on its own, without the
checkpoint, with `--engine ctranslate2` (translate, evaluate, serve) or
`Translator.from_export(DIR)`. CTranslate2 is the `export` extra: `pip install -e '.[export]'`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.checkpoint import run_model
from llm_from_scratch.export.ctranslate2_model import (
    EXPORT_DIR,
    QUANTIZATIONS,
    ExportError,
    export_checkpoint,
    run_export_dir,
)
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.arguments import DEFAULT_RUN, Parser, parser_from_doc
from llm_from_scratch.programs.command import run_main

FORMATS = ("ctranslate2",)


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    if args.ensemble:
        raise ExportError(
            "an ensemble cannot be exported: a CTranslate2 model is one Transformer "
            "(average the checkpoints with scripts/average_checkpoints.py, then export that)"
        )
    runs_dir = PathsConfig().runs_dir
    checkpoint = Path(args.checkpoint) if args.checkpoint else run_model(runs_dir, args.run)
    if args.output:
        output = Path(args.output)
    elif args.checkpoint:
        output = checkpoint.parent / EXPORT_DIR
    else:
        output = run_export_dir(runs_dir, args.run)
    summary = export_checkpoint(
        checkpoint,
        output,
        quantization=args.quantization,
        run=None if args.checkpoint else args.run,
        force=args.force,
    )
    print(f"exported {checkpoint} ({summary.quantization}) to {summary.directory}", file=sys.stderr)
    return 0


def _parser() -> Parser:
    parser = parser_from_doc(Parser, "export.py", __doc__)
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--run",
        metavar="NAME",
        default=DEFAULT_RUN,
        help=f"export the final model of runs/NAME/ (default NAME: {DEFAULT_RUN})",
    )
    choice.add_argument("--checkpoint", metavar="PATH", help="export this checkpoint file")
    # Accepted only to be refused in one line: translate and evaluate take it.
    parser.add_argument("--ensemble", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--format", choices=FORMATS, default="ctranslate2")
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="float32",
        help="CTranslate2's weight type (default float32; int8: int8 matrices)",
    )
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="where to write (default: ctranslate2/ in the run's directory, or beside "
        "--checkpoint)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing DIR")
    return parser


def run() -> None:
    """`scripts/export.py`."""
    run_main(main)
