"""Load shedding: body limit before reading, a bounded queue (503 + Retry-After), clients that
leave are dropped, docs served without a CDN, and the load test of issue 38: twenty abandoned
maximum-size requests leave a one-word request answered at once."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn

from llm_from_scratch.serving.api import create_app
from llm_from_scratch.serving.config import ServingConfig
from llm_from_scratch.serving.service import Abandoned, Search


def asgi_post(app, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict, int]:
    """POST to the ASGI app an endless body of 100-byte chunks: (status, JSON, chunks read)."""
    read = 0
    sent: list[dict] = []

    async def receive() -> dict:
        nonlocal read
        read += 1
        return {"type": "http.request", "body": b"x" * 100, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/api/translate", "raw_path": b"/api/translate",
        "query_string": b"", "root_path": "", "headers": headers, "client": ("test", 1),
        "server": ("test", 80),
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], json.loads(sent[1]["body"]), read


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(service):
    app = create_app(service, ServingConfig(max_body_bytes=1000))
    status, body, read = asgi_post(app, [(b"content-length", b"100000000")])
    assert (status, read) == (413, 0)
    assert body == {"error": "the body is 100,000,000 bytes; serving.max_body_bytes allows 1,000"}


def test_a_body_without_a_length_is_read_only_up_to_the_limit(service):
    app = create_app(service, ServingConfig(max_body_bytes=1000))
    status, body, read = asgi_post(app, [(b"content-type", b"application/json")])
    assert (status, read) == (413, 11)
    assert body == {"error": "the body is over 1,000 bytes; serving.max_body_bytes allows 1,000"}


def test_a_full_queue_answers_503_with_retry_after(client, service, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    translate = service.translator.translate

    def blocking(texts):
        entered.set()
        release.wait(10)
        return translate(texts)

    monkeypatch.setattr(service.translator, "translate", blocking)
    app = client(max_texts=2, max_queue=2)
    two = {"texts": ["a cat.", "a dog."]}
    with ThreadPoolExecutor(2) as pool:
        decoding = pool.submit(app.post, "/api/translate", json=two)
        assert entered.wait(10)
        queued = pool.submit(app.post, "/api/translate", json=two)
        time.sleep(0.3)  # for it to be queued
        refused = app.post("/api/translate", json=two)
        release.set()
        assert decoding.result().status_code == queued.result().status_code == 200
    assert refused.status_code == 503
    assert refused.json() == {"error": "the server is busy (2 texts queued); retry in 1 s"}
    assert int(refused.headers["Retry-After"]) >= 1


def test_a_request_past_its_deadline_answers_503_and_is_dropped(client, service, monkeypatch):
    release = threading.Event()
    calls: list[list[str]] = []
    translate = service.translator.translate

    def slow(texts):
        calls.append(texts)
        release.wait(10)
        return translate(texts)

    monkeypatch.setattr(service.translator, "translate", slow)
    app = client(deadline_s=0.5)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(app.post, "/api/translate", json={"texts": ["first."]})
        while not calls:
            time.sleep(0.01)
        late = app.post("/api/translate", json={"texts": ["late."]})  # queued behind it
        release.set()
        assert first.result().status_code == 503
    assert late.status_code == 503
    assert late.json() == {
        "error": "not translated within serving.deadline_s=0.5 s: the server is busy"
    }
    assert calls == [["first."]]  # the late one was dropped before decoding


def test_a_stopped_batch_stops_between_decoding_steps(service):
    stop = threading.Event()
    stop.set()
    with pytest.raises(Abandoned):
        service.translate(Search(beam=1, nbest=1, attention=False), ["hello."], stop)
    assert service.translate(Search(beam=1, nbest=1, attention=False), ["hello."])  # no stop


def test_docs_and_redoc_load_no_script_from_another_host(client):
    app = client()
    for page in ("/docs", "/redoc"):
        html = app.get(page).text
        sources = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert sources and all(source.startswith("/") for source in sources), (page, sources)
        for source in sources:
            assert app.get(source).status_code == 200, source
        assert "fonts.googleapis" not in html


@pytest.fixture
def server(service) -> Iterator[str]:
    """The app on uvicorn, in a thread: disconnects need a real socket."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        create_app(service, ServingConfig()), host="127.0.0.1", port=port, log_level="warning"
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    while not running.started:
        assert thread.is_alive()
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    running.should_exit = True
    thread.join(30)


def test_abandoned_maximum_requests_leave_a_one_word_request_answered_at_once(server):
    limits = ServingConfig()
    text = ("the cat sat on the mat and a dog ran to the park " * 30)[: limits.max_chars]
    biggest = {"texts": [text] * limits.max_texts, "beam": limits.max_beam}

    async def abandon() -> list[object]:
        async with httpx.AsyncClient(base_url=server, timeout=1.0) as http:
            posts = (http.post("/api/translate", json=biggest) for _ in range(20))
            return await asyncio.gather(*posts, return_exceptions=True)

    for outcome in asyncio.run(abandon()):  # given up after 1 s, or refused as the queue filled
        assert isinstance(outcome, httpx.TimeoutException) or outcome.status_code == 503
    started = time.perf_counter()
    response = httpx.post(f"{server}/api/translate", json={"texts": ["hello."]}, timeout=10)
    seconds = time.perf_counter() - started
    assert response.status_code == 200
    assert seconds < 2, f"the one-word request took {seconds:.1f} s"
