"""`scripts/export.py`: write a run's model for another inference engine (CTranslate2) or for
🤗 transformers.

    export.py --format ctranslate2                 runs/default's model to runs/default/ctranslate2/
    export.py --quantization int8                  int8 weights (float32 elsewhere)
    export.py --checkpoint runs/x/best.pt --output /srv/model --force
    export.py --format transformers                runs/default/transformers/: a Hub model folder
    export.py --format transformers --push-to-hub USER/NAME     ... and upload it

CTranslate2: the directory holds its model files, both tokenizers and manifest.json (run, step,
dev BLEU, quantization, tokenizer hashes, the run's config): it translates on its own, without
the checkpoint, with `--engine ctranslate2` (translate, evaluate, serve) or
`Translator.from_export(DIR)`.
transformers: a folder `AutoModelForSeq2SeqLM` and `AutoTokenizer` load with no custom code
(config.json, model.safetensors, generation_config.json with the run's search, tokenizer.json),
with a model card (README.md) and what reads it back (`Translator.from_pretrained(DIR)`).
`--push-to-hub` uploads it with huggingface_hub (log in first: `hf auth login`, or HF_TOKEN).
Both are the `export` extra: `pip install -e '.[export]'`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.atomic import check_writable
from llm_from_scratch.export.formats import FORMATS, QUANTIZATIONS, ExportError, run_export_dir
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.arguments import Parser
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.model_choice import DEFAULT_RUN, model_file


def main(argv: Sequence[str]) -> int:
    # torch, CTranslate2 and transformers load only once the arguments are known to be good
    args, _ = _parser().parse(argv)
    if args.ensemble:
        raise ExportError(
            "an ensemble cannot be exported: an exported model is one Transformer "
            "(average the checkpoints with scripts/average_checkpoints.py, then export that)"
        )
    transformers = args.format == "transformers"
    if transformers and args.quantization != "float32":
        raise ExportError("--quantization is CTranslate2's; the transformers export is float32")
    if args.push_to_hub and not transformers:
        raise ExportError("--push-to-hub uploads a transformers export: add --format transformers")
    runs_dir = PathsConfig().runs_dir
    checkpoint = model_file(args, runs_dir)
    if args.output:
        output = Path(args.output)
    elif args.checkpoint:
        output = checkpoint.parent / args.format  # the folder is named after the format
    else:
        output = run_export_dir(runs_dir, args.run, args.format)
    # Before the model loads: the export is staged beside its folder, then moved in place.
    check_writable(output.parent, f"the export {output}", "write it elsewhere with --output DIR")
    run = None if args.checkpoint else args.run
    if transformers:
        from llm_from_scratch.export.hub import push_to_hub
        from llm_from_scratch.export.transformers_model import export_to_transformers

        exported = export_to_transformers(
            checkpoint, output, run=run, force=args.force, hub_name=args.push_to_hub
        )
        if exported.up_to_date:
            print(
                f"{exported.directory} is up to date: it holds {checkpoint}'s weights; nothing "
                "to do (--force writes it again)",
                file=sys.stderr,
            )
        else:
            print(
                f"exported {checkpoint} as {exported.model_class} to {exported.directory} "
                f"in {exported.seconds:.1f} s",
                file=sys.stderr,
            )
        if args.push_to_hub:
            url = push_to_hub(exported.directory, args.push_to_hub, private=args.private)
            print(f"uploaded {exported.directory} to {url}", file=sys.stderr)
        return 0
    from llm_from_scratch.export.ctranslate2_model import export_checkpoint

    summary = export_checkpoint(
        checkpoint,
        output,
        quantization=args.quantization,
        run=run,
        force=args.force,
    )
    if summary.up_to_date:
        print(
            f"{summary.directory} is up to date: it holds {checkpoint}'s weights "
            f"({summary.quantization}); nothing to do (--force writes it again)",
            file=sys.stderr,
        )
        return 0
    print(f"exported {checkpoint} ({summary.quantization}) to {summary.directory}", file=sys.stderr)
    return 0


def _parser() -> Parser:
    parser = Parser("export.py", __doc__)
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
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="ctranslate2",
        help="CTranslate2 (default) or a 🤗 transformers model folder",
    )
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="float32",
        help="CTranslate2's weight type (default float32; int8: int8 matrices)",
    )
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="where to write (default: ctranslate2/ or transformers/ in the run's directory, or "
        "beside --checkpoint)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing DIR")
    parser.add_argument(
        "--push-to-hub",
        metavar="NAME",
        help="upload the transformers export to the Hub repository NAME (user/model)",
    )
    parser.add_argument(
        "--private", action="store_true", help="with --push-to-hub: create the repository private"
    )
    return parser


def run() -> None:
    """`scripts/export.py`."""
    run_main(main)
