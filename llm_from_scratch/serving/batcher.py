"""Micro-batching: requests that arrive together are decoded together.

A request's texts wait in a queue. One worker task takes what is queued, waits up to `wait_s` for
more while under the token budget, groups the jobs by their search settings and runs each group
as one call of `work` in a thread (the `decoder` executor's, else asyncio's default executor), so
the event loop keeps accepting requests while the model decodes. Under load the queue fills while
a batch decodes, so batches grow with the load.

The queue holds at most `max_queue` texts: beyond that `submit` raises `QueueFull` at once. A job
whose caller stopped waiting (its client left, or its deadline passed: the awaiting task was
cancelled, which cancels the job's future) is dropped before decoding; a batch whose every job
was dropped while it decoded is told to stop through the `threading.Event` `work` receives.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Result = TypeVar("Result")


class QueueFull(Exception):
    """The queue holds as many texts as it may; `retry_after_s` is when to try again."""

    def __init__(self, queued: int, retry_after_s: int) -> None:
        super().__init__(f"the server is busy ({queued} texts queued); retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


@dataclass(eq=False)
class Job(Generic[Key, Result]):
    key: Key  # jobs decode together only with jobs of the same key
    texts: list[str]
    tokens: int  # what the job counts against the batch's token budget
    future: asyncio.Future[list[Result]]


def batches(jobs: Sequence[Job], budget: int) -> list[list[Job]]:
    """`jobs` grouped by key in order of arrival, each group cut into batches of at most `budget`
    tokens; a job over the budget is a batch of its own, never split."""
    groups: dict[Hashable, list[list[Job]]] = {}
    for job in jobs:
        runs = groups.setdefault(job.key, [[]])
        if runs[-1] and sum(queued.tokens for queued in runs[-1]) + job.tokens > budget:
            runs.append([])
        runs[-1].append(job)
    return [batch for runs in groups.values() for batch in runs]


class MicroBatcher(Generic[Key, Result]):
    """`await submit(key, texts, tokens)` returns `work(key, all_texts, stop)`'s results for
    `texts`; `run()` is the worker, to be run as a task for as long as requests come."""

    def __init__(
        self,
        work: Callable[[Key, list[str], threading.Event], list[Result]],
        budget: int,
        wait_s: float,
        max_queue: int = 1 << 30,
        decoder: Executor | None = None,
    ) -> None:
        self.work = work
        self.decoder = decoder  # None: asyncio's default executor
        self.budget = budget
        self.wait_s = wait_s
        self.max_queue = max_queue
        self._queue: asyncio.Queue[Job] = asyncio.Queue()
        self._waiting: set[Job] = set()  # queued and still wanted
        self._batch_s = 1.0  # how long the last batch took: the advice to a refused client

    @property
    def queued_texts(self) -> int:
        return sum(len(job.texts) for job in self._waiting)

    def retry_after_s(self) -> int:
        """When a refused client should try again: the last batch's decoding time."""
        return max(1, math.ceil(self._batch_s))

    def check_room(self, texts: int) -> None:
        """Raise `QueueFull` unless `texts` more texts may queue (a first job always may)."""
        queued = self.queued_texts
        if queued and queued + texts > self.max_queue:
            raise QueueFull(queued, self.retry_after_s())

    async def submit(self, key: Key, texts: list[str], tokens: int) -> list[Result]:
        self.check_room(len(texts))
        job: Job = Job(key, texts, tokens, asyncio.get_running_loop().create_future())
        self._waiting.add(job)
        job.future.add_done_callback(lambda _: self._waiting.discard(job))
        self._queue.put_nowait(job)
        return await job.future

    async def run(self) -> None:
        while True:
            for batch in batches(await self._collect(), self.budget):
                await self._decode(batch)

    async def _next(self) -> Job:
        """The next queued job that is still wanted."""
        while (job := await self._queue.get()).future.done():
            pass
        return job

    async def _collect(self) -> list[Job]:
        """The next job, with those that are queued or come within `wait_s`, up to the budget."""
        loop = asyncio.get_running_loop()
        jobs = [await self._next()]
        deadline = loop.time() + self.wait_s
        while sum(job.tokens for job in jobs) < self.budget:
            if not self._queue.empty():
                job = self._queue.get_nowait()
                if not job.future.done():
                    jobs.append(job)
                continue
            try:
                jobs.append(await asyncio.wait_for(self._next(), deadline - loop.time()))
            except asyncio.TimeoutError:
                break
        for job in jobs:
            self._waiting.discard(job)
        return jobs

    async def _decode(self, batch: list[Job]) -> None:
        batch = [job for job in batch if not job.future.done()]  # dropped while others decoded
        if not batch:
            return
        stop = threading.Event()
        wanted = len(batch)

        def dropped(_: asyncio.Future) -> None:
            nonlocal wanted
            wanted -= 1
            if wanted == 0:
                stop.set()

        for job in batch:
            job.future.add_done_callback(dropped)
        texts = [text for job in batch for text in job.texts]
        started = time.perf_counter()
        try:
            results = await asyncio.get_running_loop().run_in_executor(
                self.decoder, self.work, batch[0].key, texts, stop
            )
        except Exception as error:  # each request answers with it; the batcher goes on
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(error)
            return
        finally:
            self._batch_s = time.perf_counter() - started
        start = 0
        for job in batch:
            if not job.future.done():  # not cancelled by a client that left
                job.future.set_result(results[start : start + len(job.texts)])
            start += len(job.texts)
