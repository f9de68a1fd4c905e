"""A checkpoint as a 🤗 transformers model folder, loaded by stock classes without custom code,
and such a folder read back into this project's model and tokenizers.

    <dir>/config.json, model.safetensors, generation_config.json     transformers' files
    <dir>/tokenizer.json, tokenizer_config.json, ...                  `transformers_tokenizer.py`
    <dir>/README.md                                                   the model card
    <dir>/llm_from_scratch.json   the run, step, dev BLEU, tokenizer hashes and the run's config
    <dir>/src_tokenizer.json, tgt_tokenizer.json     this project's tokenizers, for reading back

The class that holds the model exactly:
- pre-LN (`model.norm_first`, the default): `PegasusForConditionalGeneration`: LayerNorm before
  each sublayer, a final LayerNorm after each stack, no LayerNorm on the embeddings;
- post-LN: `MarianMTModel`: LayerNorm after each residual sum, none after the stacks.
Both scale token embeddings by √d_model (`scale_embedding`), add a sinusoidal table that they load
from the weights (ours interleaves sin and cos where theirs concatenates them: the table is
exported as it is), count positions from 0 on both sides, scale attention scores by 1/√d_head,
have biases on every projection, ReLU or GELU (erf) between the feed-forward layers, LayerNorm
ε 1e-5 and `final_logits_bias`. Both share one embedding table between the encoder and decoder,
so separate vocabularies become one: the source's ids, then the target's at +|source|, the
table the two stacked, and the source's rows kept out of every output by a final_logits_bias of
-inf (they take no probability). The output projection is that table where ours is tied
(`tie_word_embeddings`), its own matrix where not. A shared vocabulary is exported as it is.

Search: `generation_config.json` holds the run's decoding settings. Greedy search is ours. Beam
search differs in three ways: transformers divides a finished hypothesis's log-probability by
L^β (L: its tokens, EOS counted), where this project divides by GNMT's ((5 + L) / 6)^α, so β is
α L₀ / (L₀ + 5), which grows at GNMT's rate at L = L₀ (`TYPICAL_OUTPUT_TOKENS`); its no-repeat
ban applies after the softmax and spares no number; and its length limit is one maximum, not
a * src_len + b. <bos> and <pad> are never outputs (`suppress_tokens`, after the softmax as here).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.atomic import atomic_writer, give_file_modes
from llm_from_scratch.checkpoint import (
    DIGEST_KEY,
    CheckpointSummary,
    check_finite,
    load_checkpoint,
    reason,
    restore_for_inference,
)
from llm_from_scratch.errors import UserError
from llm_from_scratch.export.length_penalty import length_penalty_beta
from llm_from_scratch.export.model_card import card_metrics, model_card
from llm_from_scratch.export.transformers_tokenizer import build_tokenizer, special_token_strings
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.layers import sinusoidal_positions
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.paths import RunDir
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer

MANIFEST = "llm_from_scratch.json"
TOKENIZER_FILES = {"src": "src_tokenizer.json", "tgt": "tgt_tokenizer.json"}
FORMAT = "llm-from-scratch-transformers"
VERSION = 1
INSTALL_HINT = "pip install -e '.[export]'"
CLASSES = {True: "PegasusForConditionalGeneration", False: "MarianMTModel"}  # by norm_first
MODEL_TYPES = {True: "pegasus", False: "marian"}


class TransformersExportError(UserError):
    """What cannot be exported to transformers, or a folder that cannot be read back."""


def import_transformers() -> Any:
    """The `transformers` module, or a one-line error saying how to install it."""
    try:
        import transformers
    except ModuleNotFoundError:
        raise TransformersExportError(
            f"the transformers export needs the transformers package: install the export extra "
            f"(`{INSTALL_HINT}`, or `make setup`)"
        ) from None
    return transformers


@dataclass(frozen=True)
class Layout:
    """Where each side's ids lie in the exported vocabulary."""

    src_size: int
    tgt_size: int
    shared: bool

    @property
    def offset(self) -> int:
        """The exported id of target id 0."""
        return 0 if self.shared else self.src_size

    @property
    def size(self) -> int:
        return self.src_size if self.shared else self.src_size + self.tgt_size

    @classmethod
    def of(cls, src_tok: BPETokenizer, tgt_tok: BPETokenizer, shared: bool) -> Layout:
        return cls(src_tok.vocab_size, tgt_tok.vocab_size, shared)


def hf_config(cfg: ModelConfig, layout: Layout, tgt_tok: BPETokenizer, tied: bool) -> dict:
    """The keyword arguments of the Pegasus or Marian config that holds `cfg`."""
    offset = layout.offset
    config = {
        "vocab_size": layout.size,
        "d_model": cfg.d_model,
        "encoder_layers": cfg.n_encoder_layers,
        "decoder_layers": cfg.n_decoder_layers,
        "encoder_attention_heads": cfg.n_heads,
        "decoder_attention_heads": cfg.n_heads,
        "encoder_ffn_dim": cfg.d_ff,
        "decoder_ffn_dim": cfg.d_ff,
        "activation_function": cfg.activation,
        # Ours: on embeddings and sublayer outputs only, as their `dropout`.
        "dropout": cfg.dropout,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
        "max_position_embeddings": cfg.max_positions,
        "scale_embedding": True,
        "tie_word_embeddings": tied,
        "is_encoder_decoder": True,
        # The source's <pad>: what the tokenizer pads with, so a mask can be read off the ids.
        "pad_token_id": 0,
        "bos_token_id": offset + tgt_tok.bos_id,
        "eos_token_id": offset + tgt_tok.eos_id,
        "decoder_start_token_id": offset + tgt_tok.bos_id,
        "forced_eos_token_id": None,
    }
    if not cfg.norm_first:
        config.update(share_encoder_decoder_embeddings=True, decoder_vocab_size=layout.size)
    return config


def generation_settings(
    decoding: dict[str, Any], cfg: ModelConfig, layout: Layout, tgt_tok: BPETokenizer
) -> dict[str, Any]:
    """The `GenerationConfig` keyword arguments of a run's decoding settings."""
    offset = layout.offset
    beam = int(decoding.get("beam_size", 1))
    settings = {
        "num_beams": beam,
        "do_sample": False,
        "no_repeat_ngram_size": int(decoding.get("no_repeat_ngram_size", 0)),
        # Our cap: at most max_positions tokens, EOS counted; theirs counts the start token too.
        "max_length": cfg.max_positions + 1,
        "suppress_tokens": [offset + tgt_tok.bos_id, offset + tgt_tok.pad_id],
        "bos_token_id": offset + tgt_tok.bos_id,
        "eos_token_id": offset + tgt_tok.eos_id,
        "decoder_start_token_id": offset + tgt_tok.bos_id,
        "pad_token_id": 0,
        "forced_eos_token_id": None,
    }
    if beam > 1:
        settings["length_penalty"] = length_penalty_beta(float(decoding.get("length_penalty", 0)))
        settings["early_stopping"] = False
    return settings


def to_hf_weights(model: Seq2SeqTransformer, layout: Layout) -> dict[str, torch.Tensor]:
    """`model`'s weights under the Pegasus / Marian names, float32."""
    weights = {name: tensor.detach().float() for name, tensor in model.state_dict().items()}
    cfg = model.cfg
    src_table = weights["encoder.embedding.token.weight"]
    tgt_table = weights["decoder.embedding.token.weight"]
    table = src_table if layout.shared else torch.cat([src_table, tgt_table])
    positions = sinusoidal_positions(cfg.max_positions, cfg.d_model)
    hf = {
        "model.shared.weight": table,
        "model.encoder.embed_tokens.weight": table,
        "model.decoder.embed_tokens.weight": table,
        "model.encoder.embed_positions.weight": positions,
        "model.decoder.embed_positions.weight": positions.clone(),  # not a tied weight
    }
    output = weights["output_proj.weight"]
    if not layout.shared:
        output = torch.cat([torch.zeros_like(src_table), output])
    hf["lm_head.weight"] = table if _tied(model) else output
    bias = torch.zeros(1, layout.size)
    bias[0, : layout.offset] = float("-inf")
    hf["final_logits_bias"] = bias
    for stack, count in (("encoder", cfg.n_encoder_layers), ("decoder", cfg.n_decoder_layers)):
        if cfg.norm_first:
            _rename_norm(hf, weights, f"{stack}.final_norm", f"model.{stack}.layer_norm")
        for index in range(count):
            ours, theirs = f"{stack}.layers.{index}", f"model.{stack}.layers.{index}"
            for attention, hf_attention in _attentions(stack):
                _split_attention(hf, weights, f"{ours}.{attention}", f"{theirs}.{hf_attention}")
            for residual, norm in _norms(stack):
                _rename_norm(hf, weights, f"{ours}.{residual}.norm", f"{theirs}.{norm}")
            for linear, hf_linear in (("expand", "fc1"), ("contract", "fc2")):
                _rename_linear(
                    hf, weights, f"{ours}.feed_forward.{linear}", f"{theirs}.{hf_linear}"
                )
    _reorder_hidden(hf, hidden_order(cfg.d_model))
    return hf


def from_hf_weights(
    hf: dict[str, torch.Tensor], cfg: ModelConfig, layout: Layout, tied: bool, origin: str
) -> dict[str, torch.Tensor]:
    """Our state dict from Pegasus / Marian weights (`to_hf_weights`'s inverse), refusing what
    our model cannot hold: a position table other than the sinusoidal one, a logit bias."""
    hf = dict(hf)
    _reorder_hidden(hf, torch.argsort(hidden_order(cfg.d_model)))
    shared = hf["model.shared.weight"]
    encoder_table = hf.get("model.encoder.embed_tokens.weight", shared)
    decoder_table = hf.get("model.decoder.embed_tokens.weight", shared)
    positions = sinusoidal_positions(cfg.max_positions, cfg.d_model)
    for stack in ("encoder", "decoder"):
        table = hf.get(f"model.{stack}.embed_positions.weight", positions)  # Marian omits it
        # Marian's table as transformers computes it (numpy, then float32) may differ from ours
        # in the last bit of a value in [-1, 1]: a few float32 ulps.
        if table.shape != positions.shape or not torch.allclose(
            table.float(), positions, atol=1e-6
        ):
            raise TransformersExportError(
                f"{origin}: its {stack}'s position table is not the sinusoidal one this "
                "project's model computes; it cannot be read back"
            )
    bias = hf.get("final_logits_bias", torch.zeros(1, layout.size))[0, layout.offset :]
    if torch.any(bias != 0):
        raise TransformersExportError(
            f"{origin}: its final_logits_bias is not zero on the target's tokens; this "
            "project's model has no output bias"
        )
    ours = {
        "encoder.embedding.token.weight": encoder_table[: layout.src_size],
        "decoder.embedding.token.weight": decoder_table[layout.offset :],
    }
    if not tied:
        ours["output_proj.weight"] = hf["lm_head.weight"][layout.offset :]
    for stack, count in (("encoder", cfg.n_encoder_layers), ("decoder", cfg.n_decoder_layers)):
        if cfg.norm_first:
            _rename_norm(ours, hf, f"model.{stack}.layer_norm", f"{stack}.final_norm")
        for index in range(count):
            mine, theirs = f"{stack}.layers.{index}", f"model.{stack}.layers.{index}"
            for attention, hf_attention in _attentions(stack):
                _join_attention(ours, hf, f"{theirs}.{hf_attention}", f"{mine}.{attention}")
            for residual, norm in _norms(stack):
                _rename_norm(ours, hf, f"{theirs}.{norm}", f"{mine}.{residual}.norm")
            for linear, hf_linear in (("expand", "fc1"), ("contract", "fc2")):
                _rename_linear(ours, hf, f"{theirs}.{hf_linear}", f"{mine}.feed_forward.{linear}")
    return {name: tensor.float().contiguous() for name, tensor in ours.items()}


def hidden_order(d_model: int) -> torch.Tensor:
    """The order of our hidden dimensions in theirs: our sinusoidal table interleaves sin and
    cos (2i, 2i+1), theirs puts every sine first, so their dimension j is our `order[j]`. With the
    hidden dimensions so reordered throughout, their own table is ours, and both versions of
    transformers (one loads a table from the weights, the other recomputes it) compute ours."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def _reorder_hidden(weights: dict[str, torch.Tensor], order: torch.Tensor) -> None:
    """Reorder, in place, every axis of the HF-named `weights` that runs over the hidden
    dimensions (LayerNorms and attention are indifferent to their order)."""
    for name, tensor in weights.items():
        module, _, kind = name.rpartition(".")
        if module.endswith(("embed_tokens", "shared", "lm_head", "embed_positions")):
            weights[name] = tensor[:, order]
        elif module.endswith(("q_proj", "k_proj", "v_proj", "fc1")):
            weights[name] = tensor[:, order] if kind == "weight" else tensor
        elif module.endswith(("out_proj", "fc2")) or "layer_norm" in module:
            weights[name] = tensor[order]


def _tied(model: Seq2SeqTransformer) -> bool:
    return model.output_proj.weight is model.decoder.embedding.token.weight


def _attentions(stack: str) -> list[tuple[str, str]]:
    pairs = [("self_attn", "self_attn")]
    return [*pairs, ("cross_attn", "encoder_attn")] if stack == "decoder" else pairs


def _norms(stack: str) -> list[tuple[str, str]]:
    pairs = [("self_attn_residual", "self_attn_layer_norm")]
    if stack == "decoder":
        pairs.append(("cross_attn_residual", "encoder_attn_layer_norm"))
    return [*pairs, ("feed_forward_residual", "final_layer_norm")]


def _split_attention(out: dict, weights: dict, ours: str, theirs: str) -> None:
    """Our packed (q, k, v) input projection as three."""
    for name, weight, bias in zip(
        ("q_proj", "k_proj", "v_proj"),
        weights[f"{ours}.in_proj.weight"].chunk(3),
        weights[f"{ours}.in_proj.bias"].chunk(3),
        strict=True,
    ):
        out[f"{theirs}.{name}.weight"], out[f"{theirs}.{name}.bias"] = weight, bias
    _rename_linear(out, weights, f"{ours}.out_proj", f"{theirs}.out_proj")


def _join_attention(out: dict, weights: dict, theirs: str, ours: str) -> None:
    names = ("q_proj", "k_proj", "v_proj")
    out[f"{ours}.in_proj.weight"] = torch.cat([weights[f"{theirs}.{n}.weight"] for n in names])
    out[f"{ours}.in_proj.bias"] = torch.cat([weights[f"{theirs}.{n}.bias"] for n in names])
    _rename_linear(out, weights, f"{theirs}.out_proj", f"{ours}.out_proj")


def _rename_linear(out: dict, weights: dict, source: str, target: str) -> None:
    out[f"{target}.weight"], out[f"{target}.bias"] = (
        weights[f"{source}.weight"],
        weights[f"{source}.bias"],
    )


_rename_norm = _rename_linear  # a LayerNorm's weight and bias, renamed alike


@dataclass(frozen=True)
class TransformersExport:
    directory: Path
    model_class: str
    seconds: float
    manifest: dict[str, Any]
    up_to_date: bool = False  # the folder held this export already: nothing was written


def export_to_transformers(
    checkpoint: str | Path,
    output_dir: str | Path,
    run: str | None = None,
    force: bool = False,
    metrics: dict[str, Any] | None = None,
    hub_name: str | None = None,
) -> TransformersExport:
    """Write `checkpoint` as a transformers model folder at `output_dir` (with `force`, over an
    existing one). `metrics`: the run's test scores (`make eval`'s metrics.json), for the model
    card; by default those beside the checkpoint, if any. `hub_name`: the repository the card's
    usage names (default: the folder)."""
    started = time.perf_counter()
    transformers = import_transformers()
    output_dir = Path(output_dir)
    state = load_checkpoint(checkpoint)
    if output_dir.exists() and not force:
        held = _manifest_of(output_dir)
        digest = state.get(DIGEST_KEY)
        if digest is not None and held is not None and _made_with(held, digest, transformers):
            seconds = time.perf_counter() - started
            return TransformersExport(output_dir, held["model_class"], seconds, held, True)
        raise TransformersExportError(
            f"{output_dir} exists; remove it or pass --force to replace it"
        )
    model, src_tok, tgt_tok, config = restore_for_inference(state, "cpu", origin=str(checkpoint))
    shared = bool(config["tokenizer"]["shared"])
    layout = Layout.of(src_tok, tgt_tok, shared)
    cfg = model.cfg
    hf_model = _hf_model(transformers, model, layout, tgt_tok, config["decoding"])
    summary = CheckpointSummary.of(state, checkpoint)
    if metrics is None:
        metrics = _metrics_beside(Path(checkpoint), config)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "run": run,
        "checkpoint": str(checkpoint),
        "step": summary.step,
        "dev_bleu": summary.dev_bleu,
        "averaged_from": summary.averaged_from,
        "model_class": CLASSES[cfg.norm_first],
        "transformers_version": transformers.__version__,
        "vocabulary": {"source": layout.src_size, "target": layout.tgt_size, "shared": shared},
        "tokenizers": {
            side: {"file": TOKENIZER_FILES[side], "sha256": tok.hash}
            for side, tok in (("src", src_tok), ("tgt", tgt_tok))
        },
        "config": config,
        "source_sha256": state.get(DIGEST_KEY),  # None: a checkpoint from before the digest
    }
    # Written beside, then moved in place: a reader never sees half an export.
    staging = output_dir.with_name(output_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    hf_model.save_pretrained(staging)
    _save_tokenizer(staging, src_tok, tgt_tok, shared, cfg)
    src_tok.save(staging / TOKENIZER_FILES["src"])
    tgt_tok.save(staging / TOKENIZER_FILES["tgt"])
    _write_text(staging / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    _write_text(
        staging / "README.md",
        model_card(manifest, metrics, model.num_parameters(), hub_name or str(output_dir)),
    )
    give_file_modes(staging)  # safetensors writes model.safetensors 0600
    if output_dir.exists():
        shutil.rmtree(output_dir)
    staging.rename(output_dir)
    seconds = time.perf_counter() - started
    return TransformersExport(output_dir, CLASSES[cfg.norm_first], seconds, manifest)


def _hf_model(
    transformers: Any,
    model: Seq2SeqTransformer,
    layout: Layout,
    tgt_tok: BPETokenizer,
    decoding: dict[str, Any],
) -> Any:
    cfg = model.cfg
    config_class = transformers.PegasusConfig if cfg.norm_first else transformers.MarianConfig
    model_class = getattr(transformers, CLASSES[cfg.norm_first])
    config = config_class(**hf_config(cfg, layout, tgt_tok, _tied(model)))
    with torch.device("meta"):  # no time spent initializing weights that are replaced
        hf_model = model_class(config)
    weights = to_hf_weights(model, layout)
    expected = set(hf_model.state_dict())
    hf_model.load_state_dict({k: v for k, v in weights.items() if k in expected}, assign=True)
    hf_model.tie_weights()
    hf_model.generation_config = transformers.GenerationConfig(
        **generation_settings(decoding, cfg, layout, tgt_tok)
    )
    return hf_model.eval()


def _save_tokenizer(
    directory: Path, src_tok: BPETokenizer, tgt_tok: BPETokenizer, shared: bool, cfg: ModelConfig
) -> None:
    """tokenizer.json and the tokenizer_config.json that `AutoTokenizer` reads it with, written
    in the keys transformers 4 and 5 both read (5's `save_pretrained` names a class 4 lacks)."""
    specials = special_token_strings(src_tok, tgt_tok, shared)
    named = {"pad_token": src_tok.pad_id, "bos_token": src_tok.bos_id, "eos_token": src_tok.eos_id}
    special_map = {name: specials[token_id] for name, token_id in named.items()}
    special_map["additional_special_tokens"] = [
        text for token_id, text in enumerate(specials) if token_id not in named.values()
    ]
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **special_map,
        "model_max_length": cfg.max_positions,
        "clean_up_tokenization_spaces": False,
        # "<eos>" in a text is characters, not the token, as in the project's tokenizer.
        "split_special_tokens": True,
    }
    build_tokenizer(src_tok, tgt_tok, shared).save(str(directory / "tokenizer.json"))
    for name, content in (
        ("tokenizer_config.json", tokenizer_config),
        ("special_tokens_map.json", special_map),
    ):
        _write_text(directory / name, json.dumps(content, indent=2, ensure_ascii=False) + "\n")


def _metrics_beside(checkpoint: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """`make eval`'s full test scores of the checkpoint with the search its generation config
    names, where it has written them (`card_metrics`)."""
    return card_metrics(RunDir(checkpoint.parent).evaluations(), checkpoint, config)


def _write_text(path: Path, text: str) -> None:
    with atomic_writer(path) as file:
        file.write(text.encode("utf-8"))


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of a folder `export_to_transformers` wrote, with a one-line error for any
    other."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise TransformersExportError(
            f"{directory} is not a transformers export of this project (no {MANIFEST}); "
            '`make export ARGS="--format transformers"` writes one'
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TransformersExportError(f"{path} cannot be read: {error}") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise TransformersExportError(
            f"{path} is not a version-{VERSION} transformers export of this project "
            f"(format {manifest.get('format')!r}, version {manifest.get('version')!r})"
        )
    return manifest


def pretrained_state(directory: str | Path) -> dict[str, Any]:
    """The inference state of a transformers folder this project exported (and perhaps someone
    fine-tuned and saved again): our model's weights read from its model.safetensors, the run's
    config and both tokenizers, in the layout of a checkpoint (`checkpoint.inference_state`), so
    `checkpoint.restore_for_inference` builds the model from it. Needs `safetensors`, not
    transformers."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    tokenizers = []
    for side in ("src", "tgt"):
        entry = manifest["tokenizers"][side]
        tok = BPETokenizer.load(directory / entry["file"])
        if tok.hash != entry["sha256"]:
            raise TransformersExportError(
                f"{directory}: {entry['file']} does not match the manifest's hash "
                f"({tok.hash[:12]}… != {entry['sha256'][:12]}…); the file was altered"
            )
        tokenizers.append(tok)
    src_tok, tgt_tok = tokenizers
    config = manifest["config"]
    cfg = to_schema(config["model"], ModelConfig)
    layout = Layout.of(src_tok, tgt_tok, bool(config["tokenizer"]["shared"]))
    hf_config_data = _read_json(directory / "config.json")
    expected_type = MODEL_TYPES[cfg.norm_first]
    if (
        hf_config_data.get("model_type") != expected_type
        or hf_config_data.get("vocab_size") != layout.size
    ):
        raise TransformersExportError(
            f"{directory}/config.json is not the {expected_type} model of {layout.size} tokens "
            f"its {MANIFEST} describes"
        )
    tied = bool(hf_config_data.get("tie_word_embeddings", True))
    weights = _read_safetensors(directory)
    try:
        ours = from_hf_weights(weights, cfg, layout, tied, str(directory))
    except KeyError as missing:
        raise TransformersExportError(
            f"{directory}/model.safetensors lacks {missing}: not the model its config describes"
        ) from None
    if tied != cfg.tie_embeddings:
        raise TransformersExportError(
            f"{directory}: tie_word_embeddings={tied} but the run's model.tie_embeddings="
            f"{cfg.tie_embeddings}"
        )
    if tied:
        ours["output_proj.weight"] = ours["decoder.embedding.token.weight"]
    # No digest: a folder saved again after fine-tuning is as valid as the export.
    check_finite(ours, f"{directory}/model.safetensors")
    state = {
        "model": ours,
        "config": config,
        "tokenizers": {"src": src_tok.to_json(), "tgt": tgt_tok.to_json()},
        "tokenizer_hashes": {"src": src_tok.hash, "tgt": tgt_tok.hash},
        "progress": {"step": manifest.get("step")},
        "metrics": {} if manifest.get("dev_bleu") is None else {"bleu": manifest["dev_bleu"]},
    }
    restore_for_inference(state, "cpu", origin=str(directory))  # refuses weights that misfit
    return state


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TransformersExportError(f"{path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TransformersExportError(f"{path} cannot be read: {error}") from None


def _made_with(manifest: dict[str, Any], digest: str, transformers: Any) -> bool:
    """Whether an export's manifest says it holds the weights of `digest`, as this version of
    transformers writes them."""
    return (
        manifest.get("source_sha256") == digest
        and manifest.get("transformers_version") == transformers.__version__
    )


def _manifest_of(directory: Path) -> dict[str, Any] | None:
    """The manifest of a folder this project exported; None for anything else."""
    try:
        return read_manifest(directory)
    except UserError:
        return None


def _read_safetensors(directory: Path) -> dict[str, torch.Tensor]:
    try:
        from safetensors.torch import load_file
    except ModuleNotFoundError:
        raise TransformersExportError(
            f"reading a transformers folder needs the safetensors package (`{INSTALL_HINT}`)"
        ) from None
    path = directory / "model.safetensors"
    if not path.is_file():
        raise TransformersExportError(f"{path} does not exist (a sharded save is not read)")
    try:
        return load_file(str(path))
    except Exception as error:  # safetensors raises its own error types for a bad file
        raise TransformersExportError(f"{path} cannot be read: {reason(error)}") from None
