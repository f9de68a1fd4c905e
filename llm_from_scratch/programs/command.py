"""What every command shares: a user's error as one line, and its exit status. Light to import:
a program's `--help` and its argument errors need nothing else, a Hydra program's `--help` too
(`hydra_usage`: Hydra and torch take seconds to import, Hydra's own help dumps the config)."""

from __future__ import annotations

import errno
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from llm_from_scratch.atomic import disk_full_error
from llm_from_scratch.errors import UserError


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `UserError` into `error: <message>` on stderr and exit status 2; a full disk and a
    path refused (permissions, a read-only file system) too, wherever the write that found it
    was (a lock file, a library's cache). Logging's own write errors are not printed: on a full
    disk each log line would print a traceback."""
    logging.raiseExceptions = False
    try:
        yield
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except Exception as error:
        denied = denied_error(error)
        if denied is not None:  # a late write (or read) that no check before the work foresaw
            print(
                f"error: {denied.strerror}: {denied.filename}: change its permissions, or "
                "choose another path",
                file=sys.stderr,
            )
            sys.exit(2)
        full = disk_full_error(error)
        if full is None:
            raise
        where = f" writing {full.filename}" if full.filename else ""
        print(
            f"error: the disk is full{where} ({full.strerror}): free some space and run the "
            "command again",
            file=sys.stderr,
        )
        sys.exit(2)


def denied_error(error: BaseException | None) -> OSError | None:
    """The OSError of a path refused (permissions, a read-only file system) that `error` is, or
    was raised while handling; None if none."""
    while error is not None:
        if (
            isinstance(error, OSError)
            and error.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
            and error.filename
        ):
            return error
        error = error.__cause__ or error.__context__
    return None


def run_main(main: Callable[[Sequence[str]], int]) -> None:
    """Run a program's `main(argv)` as a command: its status is the exit status."""
    with exit_on_user_error():
        sys.exit(main(sys.argv[1:]))


# What a Hydra program's `--help` asks for; Hydra's other options (`--cfg job`) are Hydra's.
HELP_FLAGS = ("-h", "--help")
WIDTH = 100  # of the usage text's lines


def answer_help(
    argv: Sequence[str], script: str, config_name: str, summary: str, settings: dict[str, str]
) -> None:
    """Print `hydra_usage` and exit when `argv` asks for help; return otherwise."""
    if any(argument in HELP_FLAGS for argument in argv):
        try:
            print(hydra_usage(script, config_name, summary, settings), flush=True)
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit
        sys.exit(0)


def hydra_usage(script: str, config_name: str, summary: str, settings: dict[str, str]) -> str:
    """The usage of the Hydra program `script` (config `configs/<config_name>.yaml`): `summary`,
    the config groups of its defaults list with their options (the files of `configs/GROUP/`)
    and defaults, the common `settings` ({"KEY=VALUE": what it does}) and where to read more.
    Reads the YAML alone: no Hydra, no schema."""
    import textwrap

    import yaml

    from llm_from_scratch.display import shown
    from llm_from_scratch.paths import config_dir

    configs = config_dir()
    primary = yaml.safe_load((configs / f"{config_name}.yaml").read_text(encoding="utf-8"))
    groups = {
        group: default
        for entry in primary.get("defaults", [])
        if isinstance(entry, dict)
        for group, default in entry.items()
        if (configs / group).is_dir()
    }
    wrap = textwrap.TextWrapper(width=WIDTH, break_on_hyphens=False)
    lines = [f"usage: {script} [GROUP=OPTION ...] [KEY=VALUE ...]", "", *wrap.wrap(summary)]
    lines += ["", f"config groups (GROUP=OPTION: {shown(configs)}/GROUP/OPTION.yaml):"]
    column = max(map(len, groups), default=0) + 4
    wrap.subsequent_indent = " " * column
    for group, default in groups.items():
        options = ", ".join(sorted(path.stem for path in (configs / group).glob("*.yaml")))
        lines += wrap.wrap(f"  {group:<{column - 2}}{options} (default: {default or 'none'})")
    if settings:
        lines += ["", "common settings (KEY=VALUE; every key of the config can be set):"]
        column = max(map(len, settings)) + 4
        wrap.subsequent_indent = " " * column
        for key, what in settings.items():
            lines += wrap.wrap(f"  {key:<{column - 2}}{what}")
    more = {
        "--cfg job [GROUP=OPTION ...]": "the whole config, every key and its value",
        "--hydra-help": "Hydra's own options",
    }
    lines += ["", "more:", *(f"  {script} {flag:<30}{what}" for flag, what in more.items())]
    return "\n".join(lines)
