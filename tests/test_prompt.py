"""translate.py's prompt: line editing at a terminal, and a history kept outside the project."""

from __future__ import annotations

import builtins
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_from_scratch.programs.prompt import HISTORY_LINES, history_file, prompt_lines

try:  # the module the prompt edits lines and keeps its history with, where the platform has one
    import readline
except ImportError:
    readline = None

ROOT = Path(__file__).resolve().parents[1]
LEFT, UP, CTRL_D = "\x1b[D", "\x1b[A", "\x04"


def test_the_history_lies_in_the_users_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home" / ".local" / "state" / "llm-from-scratch" / "translate_history"
    assert history_file({}) == expected
    assert history_file({"XDG_STATE_HOME": "relative/state"}) == expected  # the spec ignores it
    state = tmp_path / "state"
    assert history_file({"XDG_STATE_HOME": str(state)}) == state / "llm-from-scratch" / (
        "translate_history"
    )


def typed(monkeypatch, lines: list[str]) -> None:
    """`input` returns `lines`, then Ctrl-D."""
    answers = iter(lines)

    def fake_input(text: str) -> str:
        line = next(answers, None)
        if line is None:
            raise EOFError
        return line

    monkeypatch.setattr(builtins, "input", fake_input)


@pytest.mark.skipif(readline is None, reason="no readline on this platform")
def test_each_line_is_kept_at_once_and_read_back_next_time(monkeypatch, tmp_path):
    path = tmp_path / "state" / "llm-from-scratch" / "translate_history"
    typed(monkeypatch, ["Hello.", "", "Hello.", "How are you?"])
    lines = prompt_lines("en> ", path)
    assert next(lines) == "Hello."
    assert path.read_text().splitlines() == ["Hello."]  # written before the next line is read
    assert list(lines) == ["", "Hello.", "How are you?"]
    assert path.read_text().splitlines() == ["Hello.", "How are you?"]  # no blanks, no repeats
    readline.clear_history()
    typed(monkeypatch, [])
    assert list(prompt_lines("en> ", path)) == []
    assert readline.get_history_item(readline.get_current_history_length()) == "How are you?"


@pytest.mark.skipif(readline is None, reason="no readline on this platform")
def test_the_history_keeps_the_newest_lines(monkeypatch, tmp_path):
    path = tmp_path / "history"
    path.write_text("".join(f"line {k}\n" for k in range(HISTORY_LINES + 5)))
    readline.clear_history()
    typed(monkeypatch, [])
    list(prompt_lines("en> ", path))
    kept = path.read_text().splitlines()
    assert (len(kept), kept[-1]) == (HISTORY_LINES, f"line {HISTORY_LINES + 4}")


def test_an_unwritable_history_is_said_once_and_the_prompt_goes_on(monkeypatch, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    typed(monkeypatch, ["Hello.", "Again."])
    assert list(prompt_lines("en> ", blocker / "history")) == ["Hello.", "Again."]
    if readline is not None:
        assert capsys.readouterr().err.count("warning: the prompt's history cannot be kept") == 1


ECHO = """
import sys
from pathlib import Path
from llm_from_scratch.programs.prompt import prompt_lines
for line in prompt_lines("en> ", Path(sys.argv[1])):
    print("got", repr(line), flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "openpty") or readline is None, reason="no pty")
def test_at_a_terminal_arrows_edit_the_line_and_recall_the_last(tmp_path):
    controller, terminal = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", ECHO, str(tmp_path / "history")],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=ROOT,
        env={**os.environ, "TERM": "xterm", "INPUTRC": os.devnull},
        close_fds=True,
    )
    os.close(terminal)
    seen = b""

    def read_until(wanted: bytes, start: int = 0) -> int:
        """Where `wanted`, written after `start` of the output, ends; waits for it."""
        nonlocal seen
        deadline = time.monotonic() + 30
        while seen.find(wanted, start) < 0 and time.monotonic() < deadline:
            if select.select([controller], [], [], 0.5)[0]:
                seen += os.read(controller, 4096)
        assert seen.find(wanted, start) >= 0, seen
        return seen.find(wanted, start) + len(wanted)

    try:
        read_until(b"en> ")
        os.write(controller, f"Hello{LEFT}{LEFT}X\r".encode())
        read_until(b"got 'HelXlo'")
        os.write(controller, f"{UP}!\r".encode())
        read_until(b"en> ", read_until(b"got 'HelXlo!'"))  # the next prompt, ready for Ctrl-D
        os.write(controller, CTRL_D.encode())
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
        os.close(controller)
    assert (tmp_path / "history").read_text().splitlines() == ["HelXlo", "HelXlo!"]
