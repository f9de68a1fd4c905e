"""A clean stop on SIGTERM or SIGINT (Ctrl-C): the trainer finishes the step it is in, saves
`last.pt` and raises `Stopped`, which the train program turns into one line and the exit status
a signal gives (128 + its number: 143, 130). A second signal ends the process at once, without
saving: the previous `last.pt` stays, and what the interrupted write left is removed by the next
run. A second signal within `REPEAT_WINDOW` of the first counts as the same: Ctrl-C under torchrun
reaches each worker twice, from the terminal and forwarded by torchrun.

Under torchrun every rank asks the others each step (`Distributed.any`), so all stop at the same
step, whichever got the signal; torchrun kills its workers 30 s after it forwards a signal, which
a step and a save must fit.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType, TracebackType

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
        os.write(2, f"{line} from the last save\n".encode())
        os._exit(128 + signum)
