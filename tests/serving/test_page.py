"""The web page in Debian's headless chromium (Selenium): type, click, read the translation, the
candidates and the heatmap. Without chromium and chromedriver it skips, unless REQUIRE_BROWSER is
set (CI sets it: there a missing browser fails the test)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.serving.api import STATIC, create_app
from llm_from_scratch.serving.config import ServingConfig
from llm_from_scratch.serving.service import TranslationService
from tests.decoding.builders import save_tiny_checkpoint, tiny_tokenizer

from .conftest import DEV_BLEU, STEP

SENTENCE = "the cat sat on the mat."
WAIT_S = 60  # for the first translation on a busy machine


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("REQUIRE_BROWSER"):
            pytest.fail("REQUIRE_BROWSER is set but chromium or chromedriver is not installed")
        pytest.skip("chromium and chromedriver not installed (Debian: chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(driver), options=options)
    yield chrome
    chrome.quit()


@pytest.fixture
def server(service: TranslationService) -> Iterator[str]:
    """The app of the tiny en-ja model (`service`): its URL."""
    with serving(service) as url:
        yield url


@contextmanager
def serving(service: TranslationService) -> Iterator[str]:
    """The app of `service` on a free port, in a thread, while the block runs: its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(service, ServingConfig())
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join()


def test_typing_a_sentence_shows_its_translation_candidates_and_attention(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server)
    model = browser.find_element(By.ID, "model")
    WebDriverWait(browser, WAIT_S).until(lambda _: "step" in model.text)
    assert model.text == f"model: run tiny · step {STEP} · dev BLEU {DEV_BLEU:.1f}"
    assert browser.find_element(By.ID, "direction").text == "English → Japanese"
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys(SENTENCE)
    browser.find_element(By.ID, "translate").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda _: browser.find_elements(By.CSS_SELECTOR, "#heatmap td")
    )

    assert browser.find_element(By.ID, "translation").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#candidates li")) == 1  # greedy model
    sources = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#heatmap th.source")]
    targets = browser.find_elements(By.CSS_SELECTOR, "#heatmap th.target")
    assert "".join(sources).replace("▁", " ").endswith("mat .<eos>")  # the corpus's style
    cells = browser.find_elements(By.CSS_SELECTOR, "#heatmap td")
    assert len(cells) == len(sources) * len(targets) > 0
    assert not browser.find_element(By.ID, "error").is_displayed()


def test_the_translation_keeps_the_typed_lines_and_each_sentence_has_its_heatmap(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    browser.get(server)
    WebDriverWait(browser, WAIT_S).until(
        lambda _: "step" in browser.find_element(By.ID, "model").text
    )
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys("the cat sat. a dog ran.\n\nthe mat.")
    browser.find_element(By.ID, "translate").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda _: browser.find_elements(By.CSS_SELECTOR, "#heatmap td")
    )

    lines = browser.find_element(By.ID, "translation").text.split("\n")
    assert len(lines) == 3 and lines[0] and not lines[1] and lines[2]
    sentence = Select(browser.find_element(By.ID, "sentence"))
    labels = [option.text for option in sentence.options]
    assert labels == ["1. the cat sat.", "2. a dog ran.", "3. the mat."]
    sentence.select_by_index(2)
    sources = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#heatmap th.source")]
    assert "".join(sources).replace("▁", " ").strip() == "the mat .<eos>"


LONG_SENTENCE = "the cat sat on the mat and the dog sat on the mat by the cat."  # 20+ pieces


def viewport(browser, width: int) -> None:
    """A phone's screen, `width` CSS pixels wide."""
    metrics = {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": True}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def test_a_heatmap_wider_than_a_phone_scrolls_and_says_so(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    viewport(browser, 400)
    try:
        browser.get(server)
        WebDriverWait(browser, WAIT_S).until(
            lambda _: "step" in browser.find_element(By.ID, "model").text
        )
        source = browser.find_element(By.ID, "source")
        source.clear()
        source.send_keys(LONG_SENTENCE)
        browser.find_element(By.ID, "translate").click()
        WebDriverWait(browser, WAIT_S).until(
            lambda _: browser.find_elements(By.CSS_SELECTOR, "#heatmap td")
        )
        heatmap = browser.find_element(By.ID, "heatmap")
        width = browser.execute_script("return document.documentElement.clientWidth")
        box, content = (int(heatmap.get_property(key)) for key in ("clientWidth", "scrollWidth"))
        assert width == 400 and box < width < content  # cut off, as on the phone
        assert browser.execute_script("return document.documentElement.scrollWidth") == width
        cue = browser.find_element(By.ID, "heatmap-scroll")
        assert cue.is_displayed() and "scroll it sideways" in cue.text
        browser.execute_script("arguments[0].scrollLeft = arguments[0].scrollWidth", heatmap)
        assert int(heatmap.get_property("scrollLeft")) == content - box  # it scrolls
        WebDriverWait(browser, WAIT_S).until(lambda _: not cue.is_displayed())  # the end seen
        viewport(browser, 1200)
        WebDriverWait(browser, WAIT_S).until(
            lambda _: heatmap.get_property("scrollWidth") <= heatmap.get_property("clientWidth")
        )
        assert not cue.is_displayed()  # it all fits
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# Clauses past decoding.clause_split_tokens: translated in pieces, with no one heatmap.
PIECED_SENTENCE = (
    "the cat sat on the mat, and the dog sat on the mat by the cat, and the cat sat on the mat."
)


def test_a_sentence_without_attention_says_why_and_shows_no_layer_menu(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    browser.get(server)
    WebDriverWait(browser, WAIT_S).until(
        lambda _: "step" in browser.find_element(By.ID, "model").text
    )
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys(f"the mat. {PIECED_SENTENCE}")
    browser.find_element(By.ID, "translate").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda _: browser.find_elements(By.CSS_SELECTOR, "#heatmap td")
    )
    layer = browser.find_element(By.ID, "layer")
    assert layer.is_displayed()  # the first sentence's heatmap: its layers to choose from
    Select(browser.find_element(By.ID, "sentence")).select_by_index(1)
    heatmap = browser.find_element(By.ID, "heatmap")
    assert heatmap.text.startswith("No attention for this sentence: it was long enough")
    assert not layer.is_displayed()
    Select(browser.find_element(By.ID, "sentence")).select_by_index(0)
    assert layer.is_displayed() and browser.find_elements(By.CSS_SELECTOR, "#heatmap td")


def test_a_refused_request_shows_the_servers_error(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server)
    WebDriverWait(browser, WAIT_S).until(
        lambda _: browser.find_element(By.ID, "source").get_attribute("maxlength") == "1000"
    )
    browser.execute_script("document.getElementById('source').removeAttribute('maxlength')")
    browser.find_element(By.ID, "source").clear()
    browser.find_element(By.ID, "source").send_keys("x" * 1001)
    browser.find_element(By.ID, "translate").click()
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, WAIT_S).until(lambda _: error.is_displayed())
    assert error.text == "error: texts[0]: 1001 characters, at most 1000 allowed"


@pytest.mark.parametrize("path", sorted(Path(STATIC).iterdir()), ids=lambda path: path.name)
def test_the_page_loads_nothing_from_elsewhere(path):
    assert not re.search(r"(https?:)?//[\w.-]+\.\w+/", path.read_text(encoding="utf-8"))


def test_a_ja_en_model_gets_a_japanese_to_english_page(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    checkpoint = save_tiny_checkpoint(
        tmp_path / "ja_en.pt", tiny_tokenizer(), ["data.direction=ja-en"]
    )
    translator = Translator.from_checkpoint(checkpoint, device="cpu", split_runaways=False)
    service = TranslationService(translator, run=None)
    with serving(service) as url:
        browser.get(url)
        heading = browser.find_element(By.ID, "direction")
        WebDriverWait(browser, WAIT_S).until(lambda _: heading.text == "Japanese → English")
        assert browser.title == "Japanese → English"
        assert browser.find_element(By.ID, "source-language").text == "Japanese"
        source = browser.find_element(By.ID, "source")
        assert source.get_attribute("lang") == "ja"
        assert source.get_attribute("placeholder") == "Japanese text"
        assert source.get_attribute("value") == "切符を一枚買いたいです。"
        assert browser.find_element(By.ID, "translation").get_attribute("lang") == "en"
