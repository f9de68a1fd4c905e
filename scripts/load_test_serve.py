"""Load test of scripts/serve.py: N concurrent clients, each sending a fixed number of requests.

Starts the server (with the arguments after `--`, default: run `default`'s model) on a free port,
then, for each client count, runs that many clients at once, each posting `--requests` requests
of `--texts` sentences from the small_parallel_enja test split (beam: the model's), stopping at
`--time-limit` seconds. One markdown row per client count on stdout: latency p50/p95,
sentences/s, failed requests, and the server's resident memory (RSS, Linux) before and after.

    .venv/bin/python scripts/load_test_serve.py [--clients 1 8 32] [--requests 8] [--texts 1]
        [--time-limit 120] [--input FILE] [-- --run NAME | --checkpoint PATH | serving.KEY=VALUE]

`--costly N` sends instead one text of N × "あ" (999: a 3 kB body, three tokens a character to
an English vocabulary) and prints its status, how long it took and the server's RSS before and
after (a bounded request is refused at once, or answered, and leaves no memory held).

`--abandon N` tests load shedding instead: N requests of the largest size the server allows
(`max_texts` texts of `max_chars` characters, beam `max_beam`) given up after 1 s, then one
one-word request; it prints how many were given up or refused and how long the word took.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from llm_from_scratch.paths import PathsConfig

ROOT = Path(__file__).resolve().parents[1]
START_S = 300  # for the server to load its model and answer /api/health
COLUMNS = (
    "clients",
    "requests",
    "p50 ms",
    "p95 ms",
    "sentences/s",
    "failed",
    "RSS before MiB",
    "RSS after MiB",
)


@dataclass
class Level:
    clients: int
    latencies_s: list[float] = field(default_factory=list)  # of the requests that succeeded
    sentences: int = 0  # translated by those requests
    failed: int = 0  # an error status or no answer
    unsent: int = 0  # not sent: the time limit came first
    wall_s: float = 0.0


async def run_level(url: str, clients: int, requests: int, texts: list[list[str]], limit_s: float):
    """`clients` clients at once, each posting `requests` requests in turn."""
    level = Level(clients)
    deadline = time.monotonic() + limit_s

    async def client(http: httpx.AsyncClient, number: int) -> None:
        for request in range(requests):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                level.unsent += requests - request
                return
            batch = texts[(number * requests + request) % len(texts)]
            start = time.perf_counter()
            try:
                response = await http.post(
                    "/api/translate", json={"texts": batch}, timeout=remaining
                )
                ok = response.status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                level.latencies_s.append(time.perf_counter() - start)
                level.sentences += len(batch)
            else:
                level.failed += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http, number) for number in range(clients)))
        level.wall_s = time.perf_counter() - start
    return level


def row(level: Level, requests: int, rss_before: float, rss_after: float) -> str:
    latencies = sorted(level.latencies_s) or [float("nan")]
    if len(latencies) > 1:
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        p50, p95 = cuts[49], cuts[94]
    else:
        p50 = p95 = latencies[0]
    cells = [
        str(level.clients),
        str(level.clients * requests),
        f"{p50 * 1000:.0f}",
        f"{p95 * 1000:.0f}",
        f"{level.sentences / level.wall_s:.1f}",
        f"{level.failed} (+{level.unsent} unsent)" if level.unsent else str(level.failed),
        f"{rss_before:.0f}",
        f"{rss_after:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


async def abandon(url: str, requests: int) -> tuple[int, int]:
    """`requests` requests of the largest size, given up after 1 s: (given up, refused)."""
    limits = httpx.get(f"{url}/api/health", timeout=10).json()["limits"]
    text = ("the cat sat on the mat and a dog ran to the park " * 100)[: limits["max_chars"]]
    biggest = {"texts": [text] * limits["max_texts"], "beam": limits["max_beam"]}
    async with httpx.AsyncClient(base_url=url, timeout=1.0) as http:
        posts = (http.post("/api/translate", json=biggest) for _ in range(requests))
        outcomes = await asyncio.gather(*posts, return_exceptions=True)
    given_up = sum(isinstance(outcome, httpx.TimeoutException) for outcome in outcomes)
    refused = sum(getattr(outcome, "status_code", 0) == 503 for outcome in outcomes)
    return given_up, refused


def one_word_after_abandoned(url: str, requests: int, limit_s: float) -> str:
    given_up, refused = asyncio.run(abandon(url, requests))
    start = time.perf_counter()
    try:
        status = httpx.post(f"{url}/api/translate", json={"texts": ["Hello."]}, timeout=limit_s)
        answer = f"answered ({status.status_code}) in {time.perf_counter() - start:.2f} s"
    except httpx.TimeoutException:
        answer = f"not answered within {limit_s:g} s"
    return (
        f"{requests} largest requests: {given_up} given up after 1 s, {refused} refused (503); "
        f"then a one-word request: {answer}"
    )


def costly_request(url: str, chars: int, pid: int, limit_s: float) -> str:
    """One text of `chars` × あ: its answer, its time and the server's RSS around it."""
    body = json.dumps({"texts": ["あ" * chars]}, ensure_ascii=False).encode()
    before = rss_mib(pid)
    start = time.perf_counter()
    try:
        response = httpx.post(
            f"{url}/api/translate",
            content=body,
            headers={"Content-Type": "application/json"},
            timeout=limit_s,
        )
        outcome = f"{response.status_code} {response.json().get('error', 'translated')}"
    except httpx.TimeoutException:
        outcome = f"no answer within {limit_s:g} s"
    seconds = time.perf_counter() - start
    time.sleep(1)  # what the server holds once it is done, not while it answers
    return (
        f"one text of {chars} × あ ({len(body):,} bytes of JSON): {outcome} "
        f"in {seconds:.2f} s; server RSS {before:.0f} MiB before, {rss_mib(pid):.0f} MiB after"
    )


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"error: the server exited with status {server.returncode}; see {log}")
        try:
            if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    sys.exit(f"error: the server did not answer within {START_S} s; see {log}")


def read_texts(path: Path, per_request: int) -> list[list[str]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [lines[i : i + per_request] for i in range(0, len(lines) - per_request + 1, per_request)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--requests", type=int, default=8, help="requests per client")
    parser.add_argument("--texts", type=int, default=1, help="sentences per request")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per level")
    parser.add_argument(
        "--abandon", type=int, metavar="N", help="N largest requests given up, then one word"
    )
    parser.add_argument(
        "--costly", type=int, metavar="N", help="one text of N × あ: its time and the RSS"
    )
    parser.add_argument(
        "--input",
        type=Path,
        default=Path(PathsConfig().raw_dir) / "small_parallel_enja" / "test.en",
        help="sentences, one a line (default: small_parallel_enja's test split)",
    )
    parser.add_argument("server_args", nargs="*", help="scripts/serve.py's arguments, after --")
    args = parser.parse_args()
    if min([*args.clients, args.requests, args.texts]) < 1 or args.time_limit <= 0:
        parser.error("--clients, --requests, --texts and --time-limit must be positive")
    return args


def main() -> None:
    args = parse_args()
    texts = [] if args.abandon or args.costly else read_texts(args.input, args.texts)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkdtemp(prefix="load_test_serve-")) / "server.log"
    command = [sys.executable, str(ROOT / "scripts" / "serve.py"), *args.server_args]
    with log.open("w") as output:
        server = subprocess.Popen([*command, "--port", str(port)], stdout=output, stderr=output)
    try:
        wait_until_up(url, server, log)
        if args.abandon:
            print(one_word_after_abandoned(url, args.abandon, args.time_limit), flush=True)
            return
        if args.costly:
            httpx.post(f"{url}/api/translate", json={"texts": ["Hello."]}, timeout=60)  # set-up
            print(costly_request(url, args.costly, server.pid, args.time_limit), flush=True)
            return
        asyncio.run(run_level(url, 1, 1, texts, args.time_limit))  # first-request set-up
        print(f"server: {' '.join(command[1:])} (log: {log})", file=sys.stderr)
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---:|" * len(COLUMNS))
        for clients in args.clients:
            before = rss_mib(server.pid)
            level = asyncio.run(run_level(url, clients, args.requests, texts, args.time_limit))
            print(row(level, args.requests, before, rss_mib(server.pid)), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
