"""The FastAPI app: `POST /api/translate`, `GET /api/health`, the web page at `/`, the OpenAPI
pages at `/docs` and `/redoc` (their scripts served from the `fastapi-offline` package, not a
CDN). Every error answers `{"error": "<one line>"}`; a server error's traceback goes to the
server's log only.

Load is shed rather than queued without end: a body over `serving.max_body_bytes` is refused
before it is read (413), a request that would queue more than `serving.max_queue` texts gets 503
with `Retry-After`, as does one not answered within `serving.deadline_s`. A request whose client
disconnects is dropped from the queue (and stops its batch when it was the batch's last). The
body is JSON, sent with `Content-Type: application/json`; one without it gets 415 naming the
header. A text of more than `serving.max_tokens` source tokens is refused (422) before it is
queued: what a text's decoding costs grows with its tokens, and a text of characters the
vocabulary lacks takes several a character. The `Host` header, security headers and `HEAD` are
`guard.py`'s."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Executor
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from llm_from_scratch.serving.batcher import MicroBatcher, QueueFull
from llm_from_scratch.serving.body_limit import BodyLimit
from llm_from_scratch.serving.config import ServingConfig
from llm_from_scratch.serving.guard import Guard
from llm_from_scratch.serving.service import (
    ModelInfo,
    Search,
    ServedTranslation,
    TranslationService,
)

STATIC = Path(__file__).resolve().parent / "static"
SERVER_ERROR = "internal server error (the server's log has the details)"
CLIENT_GONE = 499  # nginx's status for a client that closed the connection; no one reads it
T = TypeVar("T")


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    texts: list[str] = Field(
        description="texts in the model's source language (`model.direction` of "
        "/api/health), one translation each: every sentence of a text is translated, and its "
        "line breaks kept"
    )
    beam: int | None = Field(None, description="beam size, 1 for greedy (default: the model's)")
    nbest: int = Field(1, description="candidates returned per text, at most beam")
    attention: bool = Field(
        False, description="return each sentence's cross-attention in the best translation"
    )


class TranslateResponse(BaseModel):
    translations: list[ServedTranslation]
    model: ModelInfo


class HealthResponse(BaseModel):
    status: str
    model: ModelInfo
    limits: ServingConfig


class ErrorResponse(BaseModel):
    error: str  # one line


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "The body is not UTF-8 JSON"},
    413: {"model": ErrorResponse, "description": "The body is over serving.max_body_bytes"},
    415: {"model": ErrorResponse, "description": "No Content-Type: application/json"},
    422: {"model": ErrorResponse, "description": "A field of the wrong type or out of limits"},
    503: {"model": ErrorResponse, "description": "Busy: the queue is full or the deadline passed"},
    500: {"model": ErrorResponse, "description": "Server error"},
}


class RequestError(Exception):
    """A request the server refuses: answered with `status` and the message as the error."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


def check_request(request: TranslateRequest, limits: ServingConfig, default_beam: int) -> Search:
    """The search `request` asks for, or a `RequestError` naming what breaks the limits."""
    texts = request.texts
    if not 1 <= len(texts) <= limits.max_texts:
        raise RequestError(422, f"texts: {len(texts)} given, 1 to {limits.max_texts} allowed")
    for index, text in enumerate(texts):
        if len(text) > limits.max_chars:
            raise RequestError(
                422, f"texts[{index}]: {len(text)} characters, at most {limits.max_chars} allowed"
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:  # "\ud800" is valid JSON but not Unicode text
            raise RequestError(
                422, f"texts[{index}] is not valid UTF-8 (a lone surrogate at {error.start})"
            ) from None
    beam = default_beam if request.beam is None else request.beam
    if not 1 <= beam <= limits.max_beam:
        raise RequestError(422, f"beam={beam} must be between 1 and {limits.max_beam}")
    if not 1 <= request.nbest <= beam:
        raise RequestError(422, f"nbest={request.nbest} must be between 1 and beam={beam}")
    return Search(beam, request.nbest, request.attention)


def check_tokens(tokens: Sequence[int], limits: ServingConfig) -> None:
    """Refuse, naming it, the first text of more source tokens (`tokens`, EOS included) than
    `serving.max_tokens`."""
    for index, count in enumerate(tokens):
        if count > limits.max_tokens:
            raise RequestError(
                422,
                f"texts[{index}]: {count} tokens, at most {limits.max_tokens} allowed "
                "(serving.max_tokens; characters the model's vocabulary lacks take several "
                "tokens each): send it in parts",
            )


def validation_message(errors: Sequence[Any]) -> str:
    """pydantic's first complaint about a request body as one line; a field the request has no
    such name for comes first, with the name meant: `{"text": ...}` is told of `texts`, before
    that `texts` is missing."""
    errors = sorted(errors, key=lambda error: error["type"] != "extra_forbidden")
    error = errors[0]
    if error["type"] == "json_invalid":
        return f"the body is not JSON: {error.get('ctx', {}).get('error', error['msg'])}"
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    where = where.removeprefix(".body").removeprefix(".") or "body"
    message, others = error["msg"], errors[1:]
    if error["type"] == "extra_forbidden":
        fields = list(TranslateRequest.model_fields)
        message = f"not a field of the request (its fields: {', '.join(fields)})"
        meant = difflib.get_close_matches(str(error["loc"][-1]), fields, n=1)
        if meant:
            example = ', a list: {"texts": ["Hello."]}' if meant[0] == "texts" else ""
            message += f"; did you mean {meant[0]}{example}?"
            # that the field meant is missing is this same mistake
            others = [other for other in others if tuple(other["loc"]) != ("body", meant[0])]
    more = f" (and {len(others)} more problem{'s' * (len(others) > 1)})" if others else ""
    return f"{where}: {message}{more}"


def is_json(content_type: str | None) -> bool:
    """Whether a `Content-Type` names JSON, as FastAPI reads it: `application/json` or
    `application/<something>+json`, with any parameters. FastAPI reads a body without one as no
    JSON (`strict_content_type`): a web page elsewhere could send such a body to a server on
    localhost without the browser asking the server first."""
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


def content_type_message(content_type: str | None) -> str:
    """What a client sending its body without JSON's `Content-Type` is told."""
    sent = content_type.split(";", 1)[0].strip() if content_type else "none"
    return (
        f"the body is read as JSON only with the header Content-Type: application/json (this "
        f"request's: {sent}); with curl, send it with --json BODY or "
        "-H 'Content-Type: application/json'"
    )


async def answer_while_wanted(
    request: Request, work: Awaitable[T], deadline_s: float, retry_after_s: Callable[[], int]
) -> T:
    """`work`'s result, unless the client disconnects or `deadline_s` passes first: `work` is
    then cancelled, which drops its job from the queue."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait(
            {task, gone}, timeout=deadline_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        gone.cancel()
    if task in done:
        return task.result()
    task.cancel()
    if gone in done:
        raise RequestError(CLIENT_GONE, "the client closed the connection")
    raise RequestError(
        503,
        f"not translated within serving.deadline_s={deadline_s:g} s: the server is busy",
        {"Retry-After": str(retry_after_s())},
    )


async def _disconnected(request: Request) -> None:
    """Returns when the client disconnects (the body has been read: what comes is the end)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def create_app(
    service: TranslationService,
    limits: ServingConfig,
    decoder: Executor | None = None,
    host: str = "127.0.0.1",
) -> FastAPI:
    """The app; `decoder` is the executor that decodes (default: asyncio's), for a torch model
    the one thread that loaded it (`programs/serve.py`); `host` the address it is bound to,
    which decides the `Host` names it answers (`guard.py`)."""
    batcher = MicroBatcher(
        service.translate,
        limits.batch_tokens,
        limits.batch_wait_ms / 1000,
        limits.max_queue,
        decoder,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        worker = asyncio.create_task(batcher.run())
        yield
        worker.cancel()
        with suppress(asyncio.CancelledError):
            await worker

    app = FastAPIOffline(
        title="llm-from-scratch translation",
        description="English→Japanese translation with a model trained from scratch.",
        lifespan=lifespan,
    )

    @app.post("/api/translate", responses=ERRORS)
    async def translate(request: TranslateRequest, http: Request) -> TranslateResponse:
        search = check_request(request, limits, service.info.beam)
        batcher.check_room(len(request.texts))  # before tokenizing: a refusal costs nothing
        if sum(map(len, request.texts)) <= limits.max_chars:
            # No longer than one text may be: on the event loop, as a hop to a thread and back
            # costs more than tokenizing it.
            tokens = service.source_tokens(request.texts)
        else:  # off the event loop, which keeps answering other requests meanwhile
            tokens = await asyncio.to_thread(service.source_tokens, request.texts)
        check_tokens(tokens, limits)
        submitted = batcher.submit(search, request.texts, sum(tokens))
        translations = await answer_while_wanted(
            http, submitted, limits.deadline_s, batcher.retry_after_s
        )
        return TranslateResponse(translations=translations, model=service.info)

    @app.get("/api/health")
    async def health() -> HealthResponse:
        return HealthResponse(status="ok", model=service.info, limits=limits)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    app.add_middleware(Guard, bind=host, allowed_hosts=limits.hosts)  # the outermost

    @app.exception_handler(RequestError)
    async def refused(request: Request, error: RequestError) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=error.status, headers=error.headers)

    @app.exception_handler(QueueFull)
    async def busy(request: Request, error: QueueFull) -> JSONResponse:
        headers = {"Retry-After": str(error.retry_after_s)}
        return JSONResponse({"error": str(error)}, status_code=503, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type")
        if not is_json(content_type):
            # The body was not read as JSON at all: say so, not what its bytes lack.
            return JSONResponse({"error": content_type_message(content_type)}, status_code=415)
        status = 400 if error.errors()[0]["type"] == "json_invalid" else 422
        return JSONResponse({"error": validation_message(error.errors())}, status_code=status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        return JSONResponse(
            {"error": str(error.detail)}, status_code=error.status_code, headers=error.headers
        )

    @app.exception_handler(Exception)
    async def server_error(request: Request, error: Exception) -> JSONResponse:
        # Starlette re-raises the error after this answer, so the server logs its traceback.
        return JSONResponse({"error": SERVER_ERROR}, status_code=500)

    return app
