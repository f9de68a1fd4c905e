"""translate.py's interactive prompt: lines edited and recalled with readline where the platform
has it (arrows, Ctrl-A/E, Up for an earlier line), the history kept in the user's state directory
($XDG_STATE_HOME, else ~/.local/state), not in the project."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

APP_DIR = "llm-from-scratch"
HISTORY_FILE = "translate_history"
HISTORY_LINES = 1000  # the most the history file keeps, the newest


def history_file(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the prompt's history is kept: under $XDG_STATE_HOME when it is an absolute path (as
    the XDG Base Directory specification asks), else under ~/.local/state."""
    state = environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / APP_DIR / HISTORY_FILE


def prompt_lines(prompt: str, history: Path | None = None) -> Iterator[str]:
    """The lines typed at `prompt` until Ctrl-D or Ctrl-C, each added to the history (`history`,
    default `history_file()`) as soon as it is typed, so that none is lost however the program
    ends. A line that is not valid UTF-8 is refused in one line, and the prompt goes on."""
    editing = _readline()
    path = history_file() if history is None else history
    if editing is not None:
        path = _load_history(editing, path)
    while True:
        try:
            line = input(prompt)
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return
        except UnicodeDecodeError:
            print("error: that line is not valid UTF-8", file=sys.stderr)
            continue
        if editing is not None and line.strip() and line != _last(editing):
            editing.add_history(line)
            path = _append_history(editing, path)
        yield line


def _readline() -> ModuleType | None:
    """The readline module, which gives `input` line editing once imported; None where the
    platform has none (Windows without pyreadline)."""
    try:
        import readline
    except ImportError:
        return None
    readline.set_auto_history(
        False
    )  # lines are added by `prompt_lines`, blank ones and repeats not
    return readline


def _last(editing: ModuleType) -> str | None:
    """The newest line of the history."""
    return editing.get_history_item(editing.get_current_history_length())


def _load_history(editing: ModuleType, path: Path) -> Path | None:
    """Read the history of earlier sessions, trimmed to the newest `HISTORY_LINES`: `path`, or
    None (the history not written) where it cannot be read, which is said."""
    editing.set_history_length(HISTORY_LINES)
    try:
        editing.read_history_file(path)
        if editing.get_current_history_length() >= HISTORY_LINES:
            editing.write_history_file(path)  # drops the oldest lines past the length
    except FileNotFoundError:
        pass  # the first session
    except OSError as error:
        _warn(path, error)
        return None
    return path


def _append_history(editing: ModuleType, path: Path | None) -> Path | None:
    """Append the newest line of the history to `path`; None (the history no longer written)
    once that failed, which is said once."""
    if path is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        editing.append_history_file(1, path)
    except OSError as error:
        _warn(path, error)
        return None
    return path


def _warn(path: Path, error: OSError) -> None:
    print(
        f"warning: the prompt's history cannot be kept in {path} ({error.strerror or error}); "
        "set XDG_STATE_HOME to a writable directory to keep it",
        file=sys.stderr,
    )
