"""`scripts/translate.py`: translate arguments, a file, piped stdin, or an interactive prompt.

    translate.py "Hello." "How are you?"          one output line per argument
    translate.py --input news.txt > news.ja       one output line per input line
    cat news.txt | translate.py > news.ja         the same, from stdin
    translate.py                                  at a terminal: an interactive prompt
    translate.py --run smoke --beam 1 "Hello."    another run's model, greedy search
    translate.py decoding.length_penalty=1.4 "Hello."   any key of the run's decoding config
    translate.py --engine ctranslate2 "Hello."    the run's CTranslate2 export (`make export`)

Each line is split into sentences, every sentence is translated, and the line's translations
are joined: one output line per input line, however many sentences it holds (an argument with
line breaks counts as its lines). The model is the final one of run `default`
(runs/default/averaged.pt, else best.pt) unless --run or --checkpoint says otherwise; which one,
with its step and dev BLEU, goes to stderr. The model knows its direction (the run's
data.direction): a ja-en model reads Japanese and writes English.
Translations of a file or stdin are written as they are done, in input order, so an interrupted
run keeps what it translated; a line longer than --max-chars (default 10,000 characters) is
refused before anything is translated, and lines mostly in the language the model writes get a
warning on stderr (they are translated all the same). With --nbest N > 1 each input gives N lines
`<input line number>\\t<score>\\t<translation>`.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

# Only what parsing the command line needs is imported here: `--help` and a bad argument answer
# at once. The model's modules (torch) are imported once the arguments are known.
from llm_from_scratch.decoding.lines import (
    BATCH_LINES,
    MAX_CHARS,
    NOTHING_TO_TRANSLATE,
    InputError,
    check_length,
    has_text,
    in_written_language,
    language_name,
    mostly_in,
)
from llm_from_scratch.errors import UserError
from llm_from_scratch.programs.arguments import Parser, UsageError, positive_int
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.model_choice import (
    add_model_arguments,
    decoding_overrides,
    load_translator,
    model_file,
)
from llm_from_scratch.programs.prompt import prompt_lines

if TYPE_CHECKING:
    from llm_from_scratch.decoding.translator import Translation, Translator


def main(argv: Sequence[str]) -> int:
    args, settings = parse_args(argv)
    # The input is checked before the model loads, which takes a while.
    check_length(args.texts, "TEXT", args.max_chars)
    file_lines = None
    if args.input is not None:
        check_input_file(args.input)
        file_lines = read_lines(args.input.read_bytes(), str(args.input))
        check_length(file_lines, str(args.input), args.max_chars)
    translator, _ = load_translator(model_file(args), args, decoding_overrides(args, settings))
    if isinstance(sys.stdout, io.TextIOWrapper):
        # Translations may be Japanese: write UTF-8 whatever the locale says.
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        if file_lines is not None:
            warn_of_blank(file_lines, str(args.input))
            warn_of_language(file_lines, translator)
            write_with_progress(translator, file_lines, args.batch_lines)
        elif args.texts:
            warn_of_blank(args.texts, "the input")
            warn_of_language(args.texts, translator)
            write(translator.translate_iter(args.texts, args.batch_lines))
        elif not sys.stdin.isatty():
            lines = read_lines(sys.stdin.buffer.read(), "stdin")
            check_length(lines, "stdin", args.max_chars)
            warn_of_blank(lines, "stdin")
            warn_of_language(lines, translator)
            write_with_progress(translator, lines, args.batch_lines)
        else:
            _interactive(translator, args.max_chars)
    except BrokenPipeError:  # e.g. `| head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # what was translated is written already
        return 130
    return 0


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, str]]:
    """The flags, with the texts as lines, and the `decoding` settings."""
    args, settings = _parser().parse(argv, texts=True)
    texts = [line for text in args.words for line in text.split("\n")]  # lines of the output too
    if texts and args.input is not None:
        raise UsageError("give texts to translate or --input FILE, not both")
    args.texts = texts
    return args, settings


def _parser() -> Parser:
    parser = Parser("translate.py", __doc__, groups=["decoding"])
    parser.add_argument(
        "words",
        nargs="*",
        metavar="TEXT",
        help="texts to translate, one output line per line of each; decoding.KEY=VALUE sets "
        "a decoding key, decoding=PRESET all but clause_split_tokens (configs/decoding/)",
    )
    parser.add_argument(
        "--input", type=Path, metavar="FILE", help="file to translate, one output line per line"
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--nbest", type=positive_int, metavar="N", help="translations printed per input"
    )
    parser.add_argument(
        "--batch-lines",
        type=positive_int,
        default=BATCH_LINES,
        metavar="N",
        help=f"lines translated, then written, at a time (default: {BATCH_LINES})",
    )
    parser.add_argument(
        "--max-chars",
        type=positive_int,
        default=MAX_CHARS,
        metavar="N",
        help=f"refuse input with a line longer than N characters (default: {MAX_CHARS:,}): a "
        "line is translated at once, its time and memory growing with it",
    )
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


def warn_of_blank(lines: Sequence[str], origin: str) -> None:
    """One line on stderr when none of `lines` holds text to translate (`"   "`): each line's
    translation is empty, as the API answers such a text."""
    if not any(has_text(line) for line in lines):
        print(f"warning: {origin} has {NOTHING_TO_TRANSLATE}", file=sys.stderr)


def warn_of_language(lines: Sequence[str], translator: Translator) -> None:
    """One line on stderr when lines are mostly in the language the model translates into
    (Japanese given to an English→Japanese model): they are translated all the same."""
    wrong = [
        number
        for number, line in enumerate(lines, start=1)
        if mostly_in(line, translator.target_lang)
    ]
    if not wrong:
        return
    which = (
        f"line {wrong[0]} is"
        if len(wrong) == 1
        else f"{len(wrong)} lines (from line {wrong[0]}) are"
    )
    note = in_written_language(lines[wrong[0] - 1], translator.source_lang, translator.target_lang)
    print(f"warning: {which} {note}: translating anyway", file=sys.stderr)


def write_with_progress(translator: Translator, lines: list[str], batch_lines: int) -> None:
    """Translate and write `lines`, with a progress bar on stderr when it tells something: the
    output goes to a file or a pipe (at a terminal the translations show the progress), stderr
    is a terminal, and there is more than one group of lines. The bar counts the lines written,
    moving once per group: lines come out a group at a time, and a bar moved line by line would
    show the first of a group (the others follow within its refresh interval) until the next."""
    from tqdm import tqdm

    show = sys.stderr.isatty() and not sys.stdout.isatty() and len(lines) > batch_lines
    # Drawn at every move: one a group, which takes the group's translation time.
    with tqdm(
        total=len(lines),
        unit="line",
        disable=not show,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0,
        miniters=1,
    ) as bar:
        done = 0

        def written(count: int) -> None:
            nonlocal done
            done += count
            if done % batch_lines == 0 or done == len(lines):
                bar.update(done - bar.n)

        write(translator.translate_iter(lines, batch_lines), written)


def write(
    translations: Iterable[Translation], written: Callable[[int], object] = lambda count: None
) -> None:
    """Print each translation as it comes, flushed, so that an interrupted run keeps it;
    `written(1)` after each."""
    for line_number, translation in enumerate(translations, start=1):
        if len(translation.candidates) <= 1:
            print(translation.text, flush=True)
        else:
            for candidate in translation.candidates:
                print(f"{line_number}\t{candidate.score:.4f}\t{candidate.text}", flush=True)
        written(1)


def _interactive(translator: Translator, max_chars: int) -> None:
    language = language_name(translator.source_lang)
    print(f"Type {language} text and press Enter; Ctrl-D quits.", file=sys.stderr)
    for line in prompt_lines(f"{translator.source_lang}> "):
        try:
            check_length([line], "input", max_chars)
            warn_of_language([line], translator)
            write(translator.translate([line]))
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)


def run() -> None:
    """`scripts/translate.py`."""
    run_main(main)
