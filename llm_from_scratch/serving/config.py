"""Schema of the server's limits (`serving.KEY=VALUE` on `scripts/serve.py`'s command line)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.errors import ConfigError, check_range


@dataclass
class ServingConfig:
    max_texts: int = 32  # texts one request may carry
    max_chars: int = 1000  # characters of one text
    max_beam: int = 10  # largest beam a request may ask for
    batch_tokens: int = 4000  # source tokens decoded in one Translator call (one request: any)
    batch_wait_ms: float = 5.0  # how long the first request waits for others to join it
    max_queue: int = 128  # texts waiting to be decoded; a request beyond that gets 503
    # Bytes of a request body, refused (413) before it is read; the default holds the largest
    # valid request at the default limits even with every character \u-escaped.
    max_body_bytes: int = 1 << 20
    deadline_s: float = 60.0  # a request not answered by then gets 503, and its texts are dropped

    def __post_init__(self) -> None:
        for key in ("max_texts", "max_chars", "max_beam", "batch_tokens", "max_body_bytes"):
            check_range(f"serving.{key}", getattr(self, key), 1)
        check_range("serving.batch_wait_ms", self.batch_wait_ms, 0)
        if self.max_queue < self.max_texts:
            raise ConfigError(
                f"serving.max_queue={self.max_queue} must be at least serving.max_texts="
                f"{self.max_texts} (one full request)"
            )
        check_range("serving.deadline_s", self.deadline_s, 0, low_open=True)
