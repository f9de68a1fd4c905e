"""The JSON API through FastAPI's TestClient: translations, sentences and lines, health, one-line
errors, batching."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from llm_from_scratch.data.placeholders import PLACEHOLDERS
from llm_from_scratch.data.sentences import split_sentences
from llm_from_scratch.data.source_style import prepare_source
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.serving.api import SERVER_ERROR
from llm_from_scratch.serving.service import Search, TranslationService
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.decoding.builders import save_tiny_checkpoint

from .conftest import AVERAGED, DEV_BLEU, STEP

GREEDY = Search(beam=1, nbest=1, attention=False)
BLANK_WARNING = (
    "the text has nothing to translate, only spaces and line breaks: the translation is empty"
)
TEXTS = ["the cat sat on the mat.", "a dog ran to the park.", "これはテストです。"]


def test_translations_are_the_translators_with_their_candidates(client, checkpoint):
    response = client().post("/api/translate", json={"texts": TEXTS, "beam": 3, "nbest": 2})
    assert response.status_code == 200
    expected = Translator.from_checkpoint(
        checkpoint, device="cpu", beam_size=3, nbest=2, split_runaways=False
    )
    for served, translation in zip(
        response.json()["translations"], expected.translate(TEXTS), strict=True
    ):
        assert served["text"] == translation.text
        assert served["score"] == pytest.approx(translation.candidates[0].score)
        assert [c["text"] for c in served["candidates"]] == [c.text for c in translation.candidates]
        assert [s["attention"] for s in served["sentences"]] == [None]  # not asked for


def test_an_empty_text_has_no_candidates(client):
    served = client().post("/api/translate", json={"texts": ["  "]}).json()["translations"]
    assert served == [
        {"text": "", "score": None, "candidates": [], "sentences": [], "warning": BLANK_WARNING}
    ]


def test_every_sentence_is_translated_and_line_breaks_are_kept(client, checkpoint):
    text = "the cat sat. a dog ran!\n\nthe mat. これはテストです。"
    response = client().post("/api/translate", json={"texts": [text, TEXTS[0]], "attention": True})
    served = response.json()["translations"][0]
    sentences = [s["source"] for s in served["sentences"]]
    assert sentences == [
        *split_sentences("the cat sat. a dog ran!"),
        "the mat.",
        "これはテストです。",
    ]
    translator = Translator.from_checkpoint(checkpoint, device="cpu", split_runaways=False)
    one_by_one = [t.text for t in translator.translate(sentences)]
    assert [s["text"] for s in served["sentences"]] == one_by_one
    assert served["text"].split("\n") == ["".join(one_by_one[:2]), "", "".join(one_by_one[2:])]
    assert all(s["attention"]["source"][-1] == "<eos>" for s in served["sentences"])


def test_attention_on_request_is_a_distribution_over_labelled_source_pieces(client, service):
    response = client().post("/api/translate", json={"texts": [TEXTS[0]], "attention": True})
    served = response.json()["translations"][0]
    (sentence,) = served["sentences"]
    attention = sentence["attention"]
    # The labels spell the source as the model reads it (in its corpus's style), then EOS.
    read = prepare_source(TEXTS[0], service.translator.conventions.source_style)
    assert "".join(attention["source"][:-1]).replace("▁", " ") == read
    assert attention["source"][-1] == "<eos>"
    layers = service.translator.model.cfg.n_decoder_layers
    assert len(attention["weights"]) == layers
    assert attention["layers"] == list(range(1, layers + 1))
    for layer in attention["weights"]:
        assert len(layer) == len(attention["target"])
        for row in layer:
            assert len(row) == len(attention["source"])
            assert sum(row) == pytest.approx(1.0, abs=0.01)  # softmax over the source


def test_health_names_the_model_and_the_limits(client, checkpoint):
    health = client(max_texts=7).get("/api/health").json()
    assert health["status"] == "ok"
    assert health["model"] == {
        "run": "tiny",
        "checkpoint": "averaged.pt",  # its name: where it lies is no client's business
        "step": STEP,
        "dev_bleu": DEV_BLEU,
        "averaged_from": AVERAGED,
        "ensemble": 1,
        "beam": 1,  # the tiny checkpoint's run decodes greedily
        "engine": "torch",
        "direction": "en-ja",  # the run's data.direction, its corpus's order by default
    }
    assert health["limits"]["max_texts"] == 7


def test_the_page_and_the_openapi_docs_are_served(client):
    app = client()
    assert "<textarea" in app.get("/").text
    assert "function drawHeatmap" in app.get("/static/app.js").text
    assert app.get("/docs").status_code == 200
    assert "/api/translate" in app.get("/openapi.json").json()["paths"]


def body(**fields) -> bytes:
    return json.dumps({"texts": ["hello."], **fields}).encode()


@pytest.mark.parametrize(
    ("content", "status", "error"),
    [
        (b'{"texts": ["hello."]', 400, "the body is not JSON: "),
        (b'{"texts": ["caf\xe9"]}', 400, "There was an error parsing the body"),  # Latin-1
        (b'{"texts": ["\\ud800"]}', 422, "texts[0] is not valid UTF-8 (a lone surrogate at 0)"),
        (b'["hello."]', 422, "body: Input should be a valid dictionary"),
        (b'{"texts": "hello."}', 422, "texts: Input should be a valid list"),
        (b'{"texts": ["hello.", 3]}', 422, "texts[1]: Input should be a valid string"),
        (body(beam="5"), 422, "beam: Input should be a valid integer"),
        (body(attention="yes"), 422, "attention: Input should be a valid boolean"),
        (body(speed=1), 422, "speed: not a field of the request (its fields: texts, beam, "),
        (
            b'{"text": "hello."}',
            422,
            "text: not a field of the request (its fields: texts, beam, nbest, attention); did "
            'you mean texts, a list: {"texts": ["Hello."]}?',
        ),
        (b'{"text": ["hello."], "beam": "5"}', 422, "text: not a field of the request "),
        (b"{}", 422, "texts: Field required"),
        (body(texts=[]), 422, "texts: 0 given, 1 to 4 allowed"),
        (body(texts=["a."] * 5), 422, "texts: 5 given, 1 to 4 allowed"),
        (body(texts=["a.", "b" * 21]), 422, "texts[1]: 21 characters, at most 20 allowed"),
        (body(beam=0), 422, "beam=0 must be between 1 and 6"),
        (body(beam=7), 422, "beam=7 must be between 1 and 6"),
        (body(beam=2, nbest=3), 422, "nbest=3 must be between 1 and beam=2"),
        (body(nbest=2), 422, "nbest=2 must be between 1 and beam=1"),  # the model's beam
        (body(nbest=0), 422, "nbest=0 must be between 1 and beam=1"),
    ],
)
def test_a_bad_request_is_a_4xx_with_a_one_line_error(client, content, status, error):
    app = client(max_texts=4, max_chars=20, max_beam=6)
    response = app.post(
        "/api/translate", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == status
    assert list(response.json()) == ["error"]
    assert response.json()["error"].startswith(error)
    assert "\n" not in response.json()["error"]


@pytest.mark.parametrize(
    ("content_type", "named"),
    [
        (None, "none"),  # what a client sends that names no type
        ("application/x-www-form-urlencoded", "application/x-www-form-urlencoded"),  # curl -d
        ("text/plain; charset=utf-8", "text/plain"),
    ],
)
def test_a_body_without_jsons_content_type_is_told_the_header_to_send(client, content_type, named):
    app = client()
    headers = {"Content-Type": content_type} if content_type else {}
    refused = app.post("/api/translate", content=body(), headers=headers)
    assert refused.request.headers.get("content-type") == content_type
    assert refused.status_code == 415
    assert refused.json() == {
        "error": "the body is read as JSON only with the header Content-Type: application/json "
        f"(this request's: {named}); with curl, send it with --json BODY or "
        "-H 'Content-Type: application/json'"
    }
    for json_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        answered = app.post("/api/translate", content=body(), headers={"Content-Type": json_type})
        assert answered.status_code == 200


def test_an_unknown_path_is_a_one_line_404(client):
    response = client().get("/api/nothing")
    assert (response.status_code, response.json()) == (404, {"error": "Not Found"})


def test_a_server_error_shows_no_traceback_and_the_server_goes_on(client, service, monkeypatch):
    app = client()

    def fail(*args, **kwargs):
        raise RuntimeError("secret internals at /home/x")

    with monkeypatch.context() as patch:
        patch.setattr(service.translator, "translate", fail)
        response = app.post("/api/translate", json={"texts": ["hello."]})
    assert (response.status_code, response.json()) == (500, {"error": SERVER_ERROR})
    assert "secret" not in response.text and "Traceback" not in response.text
    assert app.post("/api/translate", json={"texts": ["hello."]}).status_code == 200


def test_a_request_of_one_texts_length_is_counted_on_the_event_loop_a_longer_one_off_it(
    client, service, monkeypatch
):
    on_loop = []
    count = service.source_tokens

    def recorded(texts: list[str]) -> int:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # a worker thread
            on_loop.append(False)
        return count(texts)

    monkeypatch.setattr(service, "source_tokens", recorded)
    app = client(max_chars=40)
    short, longer = ["the cat sat on the mat."], ["the cat sat on the mat."] * 2
    assert sum(map(len, longer)) > 40
    for texts in (short, longer):
        assert app.post("/api/translate", json={"texts": texts}).status_code == 200
    assert on_loop == [True, False]


def test_concurrent_requests_decode_in_fewer_calls_with_the_same_results(
    client, service, monkeypatch
):
    # float64: batched and one-by-one decoding then agree to the last bit, as in the decoding tests
    service.translator.model.model.double()
    texts = [f"{word} sat on the mat." for word in ("the cat", "a dog", "it", "he", "she", "we")]
    alone = [service.translate(GREEDY, [text])[0] for text in texts]
    calls = []
    translate = Translator.translate
    monkeypatch.setattr(
        Translator, "translate", lambda self, batch: calls.append(batch) or translate(self, batch)
    )
    app = client(batch_wait_ms=300)
    with ThreadPoolExecutor(len(texts)) as pool:
        responses = list(
            pool.map(lambda text: app.post("/api/translate", json={"texts": [text]}), texts)
        )
    assert len(calls) < len(texts)
    assert sum(len(batch) for batch in calls) == len(texts)
    for response, expected in zip(responses, alone, strict=True):
        served = response.json()["translations"][0]
        assert served["text"] == expected.text
        assert served["score"] == pytest.approx(expected.score, rel=1e-12)


def test_attention_labels_show_the_numbers_a_placeholder_model_read(tmp_path):
    texts = ["he is 12 .", "彼は12歳だ。", "it is 3 .", "3時だ。"]
    tok = BPETokenizer.train(texts, 300, required_characters=PLACEHOLDERS)
    path = save_tiny_checkpoint(tmp_path / "b.pt", tok, ["data.number_placeholders=true"])
    translator = Translator.from_checkpoint(path, device="cpu", split_runaways=False)
    service = TranslationService(translator, run="b")
    [served] = service.translate(Search(1, 1, True), ["He is 12."])
    (sentence,) = served.sentences
    source, target = sentence.attention.source, sentence.attention.target
    assert "".join(source[:-1]).replace("▁", " ") == "he is 12 ."  # the model read a placeholder
    assert not set(PLACEHOLDERS) & {char for label in source + target for char in label}
