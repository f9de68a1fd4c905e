"use strict";
// The page of scripts/serve.py: no build step, no external resources; it talks to /api only.

const $ = (id) => document.getElementById(id);
let sentences = []; // the shown translation's sentences, each with its cross-attention or null
// The languages the page can name, with the example it opens with in each.
const LANGUAGES = {
  en: { name: "English", example: "I would like to buy a ticket." },
  ja: { name: "Japanese", example: "切符を一枚買いたいです。" },
};

async function showModel() {
  try {
    const health = await (await fetch("/api/health")).json();
    const model = health.model;
    const facts = [model.run ? `run ${model.run}` : model.checkpoint];
    facts.push(model.step === null ? "step not recorded" : `step ${model.step}`);
    if (model.dev_bleu !== null) facts.push(`dev BLEU ${model.dev_bleu.toFixed(1)}`);
    $("model").textContent = `model: ${facts.join(" · ")}`;
    $("beam").value = model.beam;
    $("beam").max = health.limits.max_beam;
    $("source").maxLength = health.limits.max_chars;
    showDirection(model.direction);
  } catch (error) {
    $("model").textContent = `model: unknown (${error.message})`;
  }
}

// The page in the model's direction ("ja-en": Japanese → English): title, labels, example text,
// and the lang of the input and of the outputs.
function showDirection(direction) {
  const [source, target] = direction.split("-");
  const name = (code) => (LANGUAGES[code] ? LANGUAGES[code].name : code);
  const title = `${name(source)} → ${name(target)}`;
  document.title = title;
  $("direction").textContent = title;
  $("source-language").textContent = name(source);
  $("source").placeholder = `${name(source)} text`;
  $("source").lang = source;
  $("translation").lang = target;
  $("candidates").lang = target;
  const examples = Object.values(LANGUAGES).map((language) => language.example);
  if (LANGUAGES[source] && examples.includes($("source").value)) {
    $("source").value = LANGUAGES[source].example; // not what the user typed
  }
}

async function translate(event) {
  event.preventDefault();
  const beam = Number($("beam").value);
  const request = {
    texts: [$("source").value],
    beam,
    nbest: Math.min(Number($("nbest").value), beam),
    attention: true,
  };
  $("translate").disabled = true;
  $("error").hidden = true;
  try {
    const response = await fetch("/api/translate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    show(body.translations[0]);
  } catch (error) {
    $("error").textContent = `error: ${error.message}`;
    $("error").hidden = false;
  } finally {
    $("translate").disabled = false;
  }
}

function show(translation) {
  $("translation").textContent = translation.text; // its line breaks show: white-space in CSS
  $("candidates").replaceChildren(
    ...translation.candidates.map((candidate) => {
      const item = document.createElement("li");
      const score = document.createElement("span");
      score.className = "score";
      score.textContent = candidate.score.toFixed(3);
      item.append(score, candidate.text);
      return item;
    }),
  );
  sentences = translation.sentences;
  $("sentence").replaceChildren(
    ...sentences.map((sentence, index) => new Option(`${index + 1}. ${sentence.source}`, index)),
  );
  // Every sentence's attention has the same layers: the model's (or CTranslate2's last one).
  const attended = sentences.find((sentence) => sentence.attention);
  const numbers = attended ? attended.attention.layers : [];
  const layers = numbers.length;
  $("layer").replaceChildren(...numbers.map((number, i) => new Option(`layer ${number}`, i)));
  $("layer").value = layers - 1; // the last layer: usually the sharpest alignment (CTranslate2
  // returns only that one)
  $("result").hidden = false; // first: a hidden heatmap has no width to measure
  drawHeatmap();
}

function drawHeatmap() {
  const sentence = sentences[Number($("sentence").value)];
  const alignment = sentence ? sentence.attention : null;
  // No layer to choose without a heatmap: the menu would be empty, or choose nothing.
  $("layer-choice").hidden = !alignment;
  if (!alignment) {
    $("heatmap").textContent =
      "No attention for this sentence: it was long enough to be translated in several " +
      "pieces (each one's attention is over its own words), or by an ensemble.";
    showScrollCue();
    return;
  }
  const weights = alignment.weights[Number($("layer").value)];
  const largest = Math.max(...weights.flat(), 1e-9);
  const table = document.createElement("table");
  const header = table.insertRow();
  header.append(document.createElement("th"));
  for (const piece of alignment.source) header.append(cell("th", piece, "source"));
  weights.forEach((row, i) => {
    const line = table.insertRow();
    line.append(cell("th", alignment.target[i], "target"));
    row.forEach((weight, j) => {
      const square = line.insertCell();
      square.style.background = shade(weight / largest);
      square.title = `${alignment.target[i]} → ${alignment.source[j]}: ${weight}`;
    });
  });
  $("heatmap").replaceChildren(table);
  showScrollCue();
}

// A heatmap wider than the screen scrolls sideways; a phone's scrollbar is thin and fades, so a
// note says there is more, until the end has been scrolled to.
function showScrollCue() {
  const heatmap = $("heatmap");
  const hidden = heatmap.scrollWidth - heatmap.clientWidth - heatmap.scrollLeft;
  $("heatmap-scroll").hidden = hidden < 1;
}

function cell(tag, text, className) {
  const element = document.createElement(tag);
  element.textContent = text;
  element.className = className;
  return element;
}

function shade(fraction) {
  // White (no attention) to a dark blue (the matrix's largest weight).
  const channel = (dark) => Math.round(255 - fraction * (255 - dark));
  return `rgb(${channel(8)}, ${channel(48)}, ${channel(107)})`;
}

$("form").addEventListener("submit", translate);
$("layer").addEventListener("change", drawHeatmap);
$("sentence").addEventListener("change", drawHeatmap);
$("heatmap").addEventListener("scroll", showScrollCue);
window.addEventListener("resize", showScrollCue);
showModel();
