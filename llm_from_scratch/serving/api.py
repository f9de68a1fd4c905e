"""The FastAPI app: `POST /api/translate`, `GET /api/health`, the web page at `/`, the OpenAPI
page at `/docs`. Every error answers `{"error": "<one line>"}`; a server error's traceback goes
to the server's log only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from llm_from_scratch.serving.batcher import MicroBatcher
from llm_from_scratch.serving.config import ServingConfig
from llm_from_scratch.serving.service import (
    ModelInfo,
    Search,
    ServedTranslation,
    TranslationService,
)

STATIC = Path(__file__).resolve().parent / "static"
SERVER_ERROR = "internal server error (the server's log has the details)"


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    texts: list[str] = Field(description="English texts, one translation each")
    beam: int | None = Field(None, description="beam size, 1 for greedy (default: the model's)")
    nbest: int = Field(1, description="candidates returned per text, at most beam")
    attention: bool = Field(False, description="return the best translation's cross-attention")


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
    422: {"model": ErrorResponse, "description": "A field of the wrong type or out of limits"},
    500: {"model": ErrorResponse, "description": "Server error"},
}


class RequestError(Exception):
    """A request the server refuses: answered with `status` and the message as the error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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


def validation_message(errors: Sequence[Any]) -> str:
    """pydantic's first complaint about a request body as one line."""
    error = errors[0]
    if error["type"] == "json_invalid":
        return f"the body is not JSON: {error.get('ctx', {}).get('error', error['msg'])}"
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where.removeprefix('.body').removeprefix('.') or 'body'}: {error['msg']}{more}"


def create_app(service: TranslationService, limits: ServingConfig) -> FastAPI:
    batcher = MicroBatcher(service.translate, limits.batch_tokens, limits.batch_wait_ms / 1000)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        worker = asyncio.create_task(batcher.run())
        yield
        worker.cancel()
        with suppress(asyncio.CancelledError):
            await worker

    app = FastAPI(
        title="llm-from-scratch translation",
        description="English→Japanese translation with a model trained from scratch.",
        lifespan=lifespan,
    )

    @app.post("/api/translate", responses=ERRORS)
    async def translate(request: TranslateRequest) -> TranslateResponse:
        search = check_request(request, limits, service.info.beam)
        tokens = sum(service.source_tokens(text) for text in request.texts)
        translations = await batcher.submit(search, request.texts, tokens)
        return TranslateResponse(translations=translations, model=service.info)

    @app.get("/api/health")
    async def health() -> HealthResponse:
        return HealthResponse(status="ok", model=service.info, limits=limits)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(RequestError)
    async def refused(request: Request, error: RequestError) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=error.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
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
