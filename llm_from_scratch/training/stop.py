"""A clean stop on SIGTERM or SIGINT (Ctrl-C): the trainer finishes the step it is in, saves
`last.pt` and raises `Stopped`, which the train program turns into one line and the exit status
a signal gives (128 + its number: 143, 130). A second signal ends the process at once, without
saving: the previous `last.pt` stays, and what the interrupted write left is removed by the next
run. A second signal within `REPEAT_WINDOW` of the first counts as the same: Ctrl-C under torchrun
reaches each worker twice, from the terminal and forwarded by torchrun.

Under torchrun every rank asks the others each step (`Distributed.any`), so all stop at the same
step, whichever got the signal; torchrun kills its workers 30 s after it forwards a signal, which
a step and a save must fit.

Under `make train 2>&1 | tee log`, Ctrl-C stops `tee` too: the run's next write (the progress
bar's) would raise BrokenPipeError before the step's save. Within `closed_output_dropped`, what
is written to a stdout or stderr that nobody reads any more is dropped instead (Python ignores
SIGPIPE, so the write fails rather than killing the process), and the run saves and exits as at
a terminal.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TextIO

SIGNALS = (signal.SIGTERM, signal.SIGINT)
REPEAT_WINDOW = 1.0  # seconds


class Stopped(Exception):
    """Training stopped on a signal, after saving `path` at `step`."""

    def __init__(self, step: int, path: Path, signum: int) -> None:
        super().__init__(f"stopped at step {step}: saved {path}; run the same command to resume")
        self.exit_status = 128 + signum


class StopRequest:
    """Within the block, the first SIGTERM or SIGINT is recorded in `signum` for the loop to
    act on; the handlers before it come back at the block's end. A signal the process was
    started ignoring (SIGINT for a shell's background job) stays ignored. Outside the main
    thread, where Python cannot install handlers, it records nothing."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._first = 0.0  # time.monotonic() at the first signal
        self._previous: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            handled = [signum for signum in SIGNALS if signal.getsignal(signum) != signal.SIG_IGN]
            self._previous = {signum: signal.signal(signum, self._handle) for signum in handled}
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum, self._first = signum, time.monotonic()
            return
        if time.monotonic() - self._first < REPEAT_WINDOW:
            return
        # os.write, not print: the handler may have interrupted a write to stderr; the newline
        # first ends the progress bar's line.
        name = signal.Signals(signum).name
        line = f"\n{name} again: stopped at once, without saving; run the same command to resume"
        with suppress(OSError):  # stderr's reader is gone: exit all the same
            os.write(2, f"{line} from the last save\n".encode())
        os._exit(128 + signum)


# A pipe whose reader is gone (EPIPE), or a terminal that hung up (EIO)
CLOSED = (errno.EPIPE, errno.EIO)


class DroppingStream:
    """`stream`, whose writes are dropped once its reader is gone. Its file descriptor is then
    pointed at /dev/null, so that every other writer of it (a C library, a buffer flushed at
    exit) stops failing too."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as error:
            self._drop(error)
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            self._drop(error)

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, isatty...: the stream's
        if name == "stream":  # not set yet (a copy in the making)
            raise AttributeError(name)
        return getattr(self.stream, name)

    def _drop(self, error: OSError) -> None:
        if error.errno not in CLOSED:
            raise error
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
            self.stream.flush()  # what the buffer kept of the failed write, now to /dev/null
        except (OSError, ValueError):  # no descriptor of its own (a test's capture)
            pass


@contextmanager
def closed_output_dropped() -> Iterator[None]:
    """Within the block, `sys.stdout` and `sys.stderr` drop what is written once their reader
    is gone, instead of raising BrokenPipeError. Enter it before logging is set up, so that log
    handlers and progress bars write through it; on leaving, what is buffered is flushed
    through it, and the streams before it come back."""
    stdout, stderr = sys.stdout, sys.stderr
    if stdout is None or stderr is None:  # no console at all (pythonw): nothing to guard
        yield
        return
    sys.stdout, sys.stderr = DroppingStream(stdout), DroppingStream(stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = stdout, stderr
