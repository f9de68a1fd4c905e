"""`scripts/translate.py`: translate arguments, a file, piped stdin, or an interactive prompt.

    python scripts/translate.py "Hello." "How are you?"    one output line per argument
    python scripts/translate.py --input news.txt           one output line per input line
    cat news.txt | python scripts/translate.py             the same, from stdin
    python scripts/translate.py                            at a terminal: an interactive prompt
    python scripts/translate.py --checkpoint a.pt --ensemble b.pt "Hello."   two models as one

With --nbest N > 1 each input gives N lines `<input line number>\\t<score>\\t<translation>`.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.checkpoint import CheckpointError
from llm_from_scratch.decoding.translator import InputError, Translation, Translator
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.common import run_main


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    if args.input is not None:
        check_input_file(args.input)  # before the model loads, which takes a while
    overrides = {"beam_size": args.beam, "nbest": args.nbest}
    translator = Translator.from_checkpoint(
        args.checkpoint or newest_checkpoint(Path(PathsConfig().runs_dir)),
        device=args.device,
        ensemble=args.ensemble,
        **{key: value for key, value in overrides.items() if value is not None},
    )
    if isinstance(sys.stdout, io.TextIOWrapper):
        # Translations are Japanese: write UTF-8 whatever the locale says.
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        if args.texts:
            _print(translator.translate(args.texts))
        elif args.input is not None:
            _print(translator.translate(read_lines(args.input.read_bytes(), str(args.input))))
        elif not sys.stdin.isatty():
            _print(translator.translate(read_lines(sys.stdin.buffer.read(), "stdin")))
        else:
            _interactive(translator)
    except BrokenPipeError:  # e.g. `| head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="translate.py", description="Translate English to Japanese."
    )
    parser.add_argument("texts", nargs="*", help="texts to translate, one output line each")
    parser.add_argument("--input", type=Path, help="file to translate, one sentence per line")
    parser.add_argument("--checkpoint", type=Path, help="default: the newest best.pt under runs/")
    parser.add_argument(
        "--ensemble",
        type=Path,
        action="append",
        default=[],
        metavar="CHECKPOINT",
        help="another checkpoint to decode with, as one model (repeatable; same tokenizers)",
    )
    parser.add_argument("--beam", type=int, help="beam size (1: greedy); default: the run's")
    parser.add_argument("--nbest", type=int, help="translations printed per input")
    parser.add_argument("--device", default="auto", help="auto (CUDA if available), cpu, cuda:0")
    return parser


def check_input_file(path: Path) -> None:
    """Refuse an --input that cannot be read (missing, a directory, unreadable)."""
    try:
        with path.open("rb"):
            pass
    except IsADirectoryError:
        raise InputError(f"--input {path} is a directory, not a file of sentences") from None
    except OSError as error:
        raise InputError(f"--input {path}: {error.strerror}") from None


def sorted_checkpoints(runs_dir: Path) -> list[Path]:
    """Every `best.pt` under `runs_dir`, oldest first."""
    return sorted(runs_dir.glob("**/best.pt"), key=lambda path: path.stat().st_mtime)


def newest_checkpoint(runs_dir: Path) -> Path:
    """The newest run's final model: its `averaged.pt` when it kept snapshots, else `best.pt`.

    The newest run is the one whose `best.pt` was written last. On dev the average of the last
    snapshots usually beats the best single checkpoint on dev, hence the preference.
    """
    candidates = sorted_checkpoints(runs_dir)
    if not candidates:
        raise CheckpointError(
            f"no --checkpoint given and no best.pt under {runs_dir}/: train a model first "
            "(make train) or pass --checkpoint PATH"
        )
    averaged = candidates[-1].with_name("averaged.pt")
    return averaged if averaged.is_file() else candidates[-1]


def read_lines(data: bytes, origin: str) -> list[str]:
    """UTF-8 `data` as lines, a final newline not starting another line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(
            f"{origin} is not valid UTF-8: line {line} has the byte 0x{data[error.start]:02x}"
        ) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _print(translations: list[Translation]) -> None:
    for line_number, translation in enumerate(translations, start=1):
        if len(translation.candidates) <= 1:
            print(translation.text)
            continue
        for candidate in translation.candidates:
            print(f"{line_number}\t{candidate.score:.4f}\t{candidate.text}")
    sys.stdout.flush()


def _interactive(translator: Translator) -> None:
    print("Type English text and press Enter; Ctrl-D quits.", file=sys.stderr)
    while True:
        try:
            line = input("en> ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return
        except UnicodeDecodeError:
            print("error: that line is not valid UTF-8", file=sys.stderr)
            continue
        try:
            _print(translator.translate([line]))
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)


def run() -> None:
    """`scripts/translate.py`."""
    run_main(main)
