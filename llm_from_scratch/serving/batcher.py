"""Micro-batching: requests that arrive together are decoded together.

A request's texts wait in a queue. One worker task takes what is queued, waits up to `wait_s` for
more while under the token budget, groups the jobs by their search settings and runs each group
as one call of `work` in a thread, so the event loop keeps accepting requests while the model
decodes. Under load the queue fills while a batch decodes, so batches grow with the load.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Result = TypeVar("Result")


@dataclass
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
    """`await submit(key, texts, tokens)` returns `work(key, all_texts)`'s results for `texts`;
    `run()` is the worker, to be run as a task for as long as requests come."""

    def __init__(
        self, work: Callable[[Key, list[str]], list[Result]], budget: int, wait_s: float
    ) -> None:
        self.work = work
        self.budget = budget
        self.wait_s = wait_s
        self._queue: asyncio.Queue[Job] = asyncio.Queue()

    async def submit(self, key: Key, texts: list[str], tokens: int) -> list[Result]:
        future: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        await self._queue.put(Job(key, texts, tokens, future))
        return await future

    async def run(self) -> None:
        while True:
            for batch in batches(await self._collect(), self.budget):
                await self._decode(batch)

    async def _collect(self) -> list[Job]:
        """The next job, with those that are queued or come within `wait_s`, up to the budget."""
        loop = asyncio.get_running_loop()
        jobs = [await self._queue.get()]
        deadline = loop.time() + self.wait_s
        while sum(job.tokens for job in jobs) < self.budget:
            if not self._queue.empty():
                jobs.append(self._queue.get_nowait())
                continue
            try:
                jobs.append(await asyncio.wait_for(self._queue.get(), deadline - loop.time()))
            except asyncio.TimeoutError:
                break
        return jobs

    async def _decode(self, batch: list[Job]) -> None:
        texts = [text for job in batch for text in job.texts]
        try:
            results = await asyncio.to_thread(self.work, batch[0].key, texts)
        except Exception as error:  # each request answers with it; the batcher goes on
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(error)
            return
        start = 0
        for job in batch:
            if not job.future.done():  # not cancelled by a client that left
                job.future.set_result(results[start : start + len(job.texts)])
            start += len(job.texts)
