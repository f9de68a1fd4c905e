"""What the server holds to against a page of another site and a small costly request: the Host
header names it, security headers and HEAD on every page, no server path in a response, a text's
tokens bounded, warnings in the response as the CLI gives them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_from_scratch.serving.api import create_app
from llm_from_scratch.serving.config import ServingConfig

from .conftest import LOCAL

PAGES = ["/", "/api/health", "/docs", "/redoc", "/openapi.json", "/static/app.js"]
SECURITY = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": "frame-ancestors 'none'",
}


def bound(service, host: str, **limits: object) -> TestClient:
    """A client of the app as `serve.py --host host` serves it, its requests without a Host
    header of their own sent to `localhost`."""
    return TestClient(create_app(service, ServingConfig(**limits), host=host), base_url=LOCAL)


@pytest.mark.parametrize(
    ("bind", "host", "allowed"),
    [
        ("127.0.0.1", "localhost:8000", True),
        ("127.0.0.1", "127.0.0.1:8000", True),
        ("127.0.0.1", "[::1]:8000", True),
        ("127.0.0.1", "evil.example:8000", False),  # a page whose name now points here
        ("127.0.0.1", "192.168.1.5:8000", False),
        ("0.0.0.0", "192.168.1.5:8000", True),  # any address of the machine
        ("0.0.0.0", "localhost", True),
        ("0.0.0.0", "evil.example", False),
        ("192.168.1.5", "192.168.1.5:8000", True),
        ("192.168.1.5", "10.0.0.1:8000", False),
    ],
)
def test_the_host_header_must_name_the_server(service, bind, host, allowed):
    with bound(service, bind) as client:
        response = client.get("/api/health", headers={"Host": host})
    assert response.status_code == (200 if allowed else 400)
    if not allowed:
        error = response.json()["error"]
        assert error.startswith(f"the Host header {host!r} is not a name of this server")
        assert "serving.allowed_hosts=NAME" in error and "\n" not in error


def test_the_allow_list_adds_names_and_domains(service):
    with bound(service, "0.0.0.0", allowed_hosts="mt.example.com,*.corp.example") as client:
        statuses = [
            client.get("/api/health", headers={"Host": host}).status_code
            for host in ("mt.example.com", "a.corp.example:443", "corp.example", "evil.example")
        ]
    assert statuses == [200, 200, 400, 400]
    with bound(service, "127.0.0.1", allowed_hosts="*") as client:
        assert client.get("/", headers={"Host": "anything.example"}).status_code == 200


def test_a_bad_allow_list_entry_is_refused():
    with pytest.raises(ValueError, match=r"serving\.allowed_hosts: 'http://x\.example' is not a"):
        ServingConfig(allowed_hosts="http://x.example")


@pytest.mark.parametrize("path", PAGES)
def test_every_page_says_nosniff_and_no_framing_and_answers_head(service, path):
    with bound(service, "127.0.0.1") as client:
        got, head = client.get(path), client.head(path)
    assert got.status_code == head.status_code == 200
    assert {key: got.headers.get(key) for key in SECURITY} == SECURITY
    assert {key: head.headers.get(key) for key in SECURITY} == SECURITY
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]


def test_refusals_carry_the_security_headers_too(service):
    with bound(service, "127.0.0.1") as client:
        for response in (
            client.get("/api/health", headers={"Host": "evil.example"}),
            client.post("/api/translate", json={"texts": []}),
        ):
            assert response.status_code in (400, 422)
            assert response.headers["x-content-type-options"] == "nosniff"


def test_no_response_tells_where_the_checkpoint_lies(service, checkpoint):
    with bound(service, "127.0.0.1") as client:
        bodies = [
            client.get("/api/health").text,
            client.post("/api/translate", json={"texts": ["the cat sat."]}).text,
        ]
    assert all(str(checkpoint.parent) not in body for body in bodies)
    assert all(checkpoint.name in body for body in bodies)


def test_a_text_of_more_tokens_than_the_limit_is_refused_before_decoding(service, monkeypatch):
    decoded = []
    monkeypatch.setattr(service, "translate", lambda *args: decoded.append(args))
    text = "あ" * 999  # 3 kB: bytes to a vocabulary without kana, three tokens a character
    tokens = service.source_tokens([text])[0]
    assert tokens > len(text)
    with bound(service, "127.0.0.1", max_tokens=tokens - 1) as client:
        response = client.post("/api/translate", json={"texts": ["the cat.", text]})
    assert response.status_code == 422
    assert response.json()["error"] == (
        f"texts[1]: {tokens} tokens, at most {tokens - 1} allowed (serving.max_tokens; "
        "characters the model's vocabulary lacks take several tokens each): send it in parts"
    )
    assert decoded == []


def test_a_mostly_japanese_text_comes_with_the_clis_warning(service):
    with bound(service, "127.0.0.1") as client:
        served = client.post(
            "/api/translate", json={"texts": ["これはテストです。", "the cat sat.", " \n "]}
        ).json()["translations"]
    assert [translation["warning"] for translation in served] == [
        "the text is mostly Japanese, the language this model writes; it reads English: "
        "translated anyway",
        None,
        "the text has nothing to translate, only spaces and line breaks: the translation is empty",
    ]
    assert served[2]["text"] == ""
