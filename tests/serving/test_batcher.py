"""The micro-batcher's grouping, and its worker surviving a failed batch."""

from __future__ import annotations

import asyncio
import threading

import pytest

from llm_from_scratch.serving.batcher import Job, MicroBatcher, QueueFull, batches


def job(key: str, tokens: int) -> Job:
    return Job(key, [f"{key}{tokens}"], tokens, future=None)  # type: ignore[arg-type]


def test_batches_group_by_key_in_arrival_order_within_the_budget():
    jobs = [job("a", 4), job("b", 3), job("a", 5), job("a", 2), job("b", 1), job("a", 12)]
    grouped = [[(j.key, j.tokens) for j in batch] for batch in batches(jobs, budget=10)]
    assert grouped == [
        [("a", 4), ("a", 5)],
        [("a", 2)],
        [("a", 12)],  # over the budget: a batch of its own, never split
        [("b", 3), ("b", 1)],
    ]


def test_requests_waiting_together_are_one_call_and_a_failure_fails_only_its_batch():
    calls: list[list[str]] = []

    def work(key: str, texts: list[str], stop: threading.Event) -> list[str]:
        calls.append(texts)
        if key == "bad":
            raise RuntimeError("boom")
        return [text.upper() for text in texts]

    async def scenario() -> tuple[list[list[str]], list[str]]:
        batcher = MicroBatcher(work, budget=100, wait_s=0.05)
        worker = asyncio.create_task(batcher.run())
        good = asyncio.gather(*(batcher.submit("ok", [f"t{i}", "x"], 2) for i in range(5)))
        bad = batcher.submit("bad", ["y"], 1)
        results = await good
        with pytest.raises(RuntimeError, match="boom"):
            await bad
        after = await batcher.submit("ok", ["z"], 1)  # the worker goes on after a failure
        worker.cancel()
        return results, after

    results, after = asyncio.run(scenario())
    assert results == [[f"T{i}", "X"] for i in range(5)]
    assert after == ["Z"]
    assert calls[:2] == [[text for i in range(5) for text in (f"t{i}", "x")], ["y"]]


def test_a_full_queue_refuses_at_once_and_dropped_jobs_are_never_decoded():
    decoded: list[list[str]] = []
    release = threading.Event()

    def work(key: str, texts: list[str], stop: threading.Event) -> list[str]:
        decoded.append(texts)
        release.wait(5)
        return texts

    async def scenario() -> None:
        batcher = MicroBatcher(work, budget=1, wait_s=0, max_queue=4)
        worker = asyncio.create_task(batcher.run())
        first = asyncio.create_task(batcher.submit("k", ["a", "b"], 2))
        while not decoded:  # the first job is being decoded: it no longer counts as queued
            await asyncio.sleep(0.01)
        left = asyncio.create_task(batcher.submit("k", ["c", "d"], 2))
        kept = asyncio.create_task(batcher.submit("k", ["e", "f"], 2))
        await asyncio.sleep(0.01)
        assert batcher.queued_texts == 4
        with pytest.raises(QueueFull, match="4 texts queued"):
            await batcher.submit("k", ["g"], 1)
        left.cancel()  # its client went away while it waited
        await asyncio.sleep(0.01)
        assert batcher.queued_texts == 2
        release.set()
        assert await first == ["a", "b"]
        assert await kept == ["e", "f"]
        worker.cancel()

    asyncio.run(scenario())
    assert decoded == [["a", "b"], ["e", "f"]]


def test_a_batch_whose_requests_all_left_is_told_to_stop():
    stopped = threading.Event()

    def work(key: str, texts: list[str], stop: threading.Event) -> list[str]:
        if stop.wait(5):
            stopped.set()
        return texts

    async def scenario() -> None:
        batcher = MicroBatcher(work, budget=10, wait_s=0)
        worker = asyncio.create_task(batcher.run())
        jobs = [asyncio.create_task(batcher.submit("k", [f"t{i}"], 1)) for i in range(2)]
        await asyncio.sleep(0.05)
        jobs[0].cancel()
        await asyncio.sleep(0.05)
        assert not stopped.is_set()  # one request still waits for the batch
        jobs[1].cancel()
        await asyncio.to_thread(stopped.wait, 5)
        worker.cancel()

    asyncio.run(scenario())
    assert stopped.is_set()
