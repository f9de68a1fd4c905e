"""The timeline of a `scripts/gpu_run.sh` lease: its own marks, the run's log lines and its first
and last logged update, in seconds from the command's start.

    python scripts/gpu_timeline.py MARKS [--log RUN/train.log] [--events RUN]

MARKS: lines of `<what>\t<seconds since the epoch>`, as gpu_run.sh writes them. --log: the run's
train.log (Hydra's format: `[YYYY-MM-DD HH:MM:SS,mmm][logger][LEVEL] - message`, local time).
--events: the run directory, whose TensorBoard events date each logged update (wall time).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

LOG_LINE = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]\[[^]]*\]\[(?:INFO|WARNING)\] - (.*)"
)
WIDTH = 110  # a long log line is cut: the timeline is for reading at a glance


def read_marks(path: Path) -> list[tuple[float, str]]:
    marks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        what, _, stamp = line.rpartition("\t")
        if what:
            marks.append((float(stamp), what))
    return marks


def read_log(path: Path) -> list[tuple[float, str]]:
    """The INFO and WARNING lines of a train.log, with their times."""
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = LOG_LINE.match(line)
        if match:
            clock, millis, message = match.groups()
            stamp = time.mktime(time.strptime(clock, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000
            events.append((stamp, f"log: {message}"))
    return events


def read_updates(run_dir: Path) -> list[tuple[float, str]]:
    """The first and last update that the run logged to TensorBoard (its most frequent tag)."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return []
    logged = []
    for events_file in sorted(run_dir.rglob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(events_file), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in accumulator.Tags().get("scalars", []):
            logged.append(accumulator.Scalars(tag))
    if not logged:
        return []
    scalars = sorted(max(logged, key=len), key=lambda scalar: scalar.wall_time)
    first, last = scalars[0], scalars[-1]
    return [
        (first.wall_time, f"first logged update: step {first.step:,}"),
        (last.wall_time, f"last logged update: step {last.step:,}"),
    ]


def timeline(marks: list[tuple[float, str]], others: list[tuple[float, str]]) -> list[str]:
    start = min(stamp for stamp, _ in marks)
    lines = ["timeline (seconds from the command's start):"]
    for stamp, what in sorted(marks + others):
        text = what if len(what) <= WIDTH else what[: WIDTH - 1] + "…"
        lines.append(f"{stamp - start:8.1f}  {text}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("marks", type=Path)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--events", type=Path)
    args = parser.parse_args(argv)
    if not args.marks.is_file():
        print(f"gpu_timeline: {args.marks} not found", file=sys.stderr)
        return 1
    marks = read_marks(args.marks)
    if not marks:
        print(f"gpu_timeline: {args.marks} holds no marks", file=sys.stderr)
        return 1
    others: list[tuple[float, str]] = []
    if args.log is not None and args.log.is_file():
        others += read_log(args.log)
    if args.events is not None and args.events.is_dir():
        others += read_updates(args.events)
    print("\n".join(timeline(marks, others)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
