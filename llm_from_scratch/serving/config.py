"""Schema of the server's limits (`serving.KEY=VALUE` on `scripts/serve.py`'s command line)."""

from __future__ import annotations

import ipaddress
from contextlib import suppress
from dataclasses import dataclass

from llm_from_scratch.errors import ConfigError, check_range


@dataclass
class ServingConfig:
    max_texts: int = 32  # texts one request may carry
    max_chars: int = 1000  # characters of one text
    # Source tokens of one text (EOS included), as the model's tokenizer counts them: a text's
    # decoding costs with its tokens, and a character the vocabulary lacks takes several (its
    # bytes), which max_chars alone does not bound. The default holds max_chars of Japanese.
    max_tokens: int = 800
    max_beam: int = 10  # largest beam a request may ask for
    batch_tokens: int = 4000  # source tokens decoded in one Translator call (one request: any)
    batch_wait_ms: float = 5.0  # how long the first request waits for others to join it
    max_queue: int = 128  # texts waiting to be decoded; a request beyond that gets 503
    # Bytes of a request body, refused (413) before it is read; the default holds the largest
    # valid request at the default limits even with every character \u-escaped.
    max_body_bytes: int = 1 << 20
    deadline_s: float = 60.0  # a request not answered by then gets 503, and its texts are dropped
    # Host names the server answers to besides localhost's (and, bound to another address, IP
    # addresses), comma-separated: `translate.example.com,*.example.com`; `*`: any (guard.py).
    allowed_hosts: str = ""

    def __post_init__(self) -> None:
        for key in (
            "max_texts", "max_chars", "max_tokens", "max_beam", "batch_tokens", "max_body_bytes"
        ):  # fmt: skip
            check_range(f"serving.{key}", getattr(self, key), 1)
        check_range("serving.batch_wait_ms", self.batch_wait_ms, 0)
        if self.max_queue < self.max_texts:
            raise ConfigError(
                f"serving.max_queue={self.max_queue} must be at least serving.max_texts="
                f"{self.max_texts} (one full request)"
            )
        check_range("serving.deadline_s", self.deadline_s, 0, low_open=True)
        for entry in self.hosts:
            if not _is_host_name(entry):
                raise ConfigError(
                    f"serving.allowed_hosts: {entry!r} is not a host name (no scheme, port or "
                    "path: translate.example.com, *.example.com)"
                )

    @property
    def hosts(self) -> list[str]:
        """`allowed_hosts` as a list."""
        return [entry.strip() for entry in self.allowed_hosts.split(",") if entry.strip()]


def _is_host_name(entry: str) -> bool:
    """Whether an `allowed_hosts` entry is a host name, an IP address, `*.domain` or `*`."""
    with suppress(ValueError):
        ipaddress.ip_address(entry.strip("[]"))
        return True
    return entry == "*" or not any(char in entry.removeprefix("*.") for char in "/:@*[] ")
