"""A checkpoint as a CTranslate2 model directory, built with CTranslate2's own spec API.

    <dir>/model.bin, config.json, shared_vocabulary.json (or source_ and target_vocabulary.json)
                               CTranslate2's files, written by its `ModelSpec.save`
    <dir>/src_tokenizer.json, tgt_tokenizer.json      this project's tokenizers
    <dir>/manifest.json        the run, step, dev BLEU, quantization, tokenizer hashes and the
                               run's config: what `Translator.from_export` needs besides the files;
                               the sha256 of model.bin, checked when it loads, and that of the
                               checkpoint's tensors, which tells an export rerun it is up to date

How this project's Transformer maps onto the spec (see model/layers.py and model/transformer.py):
- Embeddings are scaled by √d_model (`scale_embeddings`), then the positions are added. The
  sinusoidal table interleaves sin and cos (PE(pos, 2i) = sin, PE(pos, 2i+1) = cos) where
  CTranslate2's built-in one concatenates them, so the table itself is exported as the encoder's
  and decoder's `position_encodings`; it also bounds the positions to `max_positions`.
- `in_proj` packs query, key and value as `nn.MultiheadAttention` does: self-attention takes it
  whole (CTranslate2's fused QKV), cross-attention splits it into the query and the fused KV.
- Pre-LN keeps the final LayerNorms; post-LN has none. LayerNorm ε is PyTorch's 1e-5.
- Tied embeddings are one array in the spec; `ModelSpec.save` stores it once.
- Tokens are the tokenizer's readable pieces (`token_text`), made unique (`vocabulary`); the
  special tokens keep their names from tokenizer/special_tokens.py. The decoder starts from <bos>
  and stops at <eos>; the source's <eos> is added by the caller, as `data/batch.py` does.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from llm_from_scratch.atomic import atomic_writer, give_file_modes
from llm_from_scratch.checkpoint import (
    DIGEST_KEY,
    CheckpointSummary,
    file_sha256,
    load_checkpoint,
    restore_for_inference,
)
from llm_from_scratch.export.formats import CTRANSLATE2_MANIFEST, QUANTIZATIONS, ExportError
from llm_from_scratch.model.layers import sinusoidal_positions
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.special_tokens import BOS, EOS, PAD

MANIFEST = CTRANSLATE2_MANIFEST
TOKENIZER_FILES = {"src": "src_tokenizer.json", "tgt": "tgt_tokenizer.json"}
MODEL_FILE = "model.bin"  # CTranslate2's weights
FORMAT = "llm-from-scratch-ctranslate2"
VERSION = 1
LAYER_NORM_EPSILON = 1e-5  # torch.nn.LayerNorm's default, which the model uses
INSTALL_HINT = "pip install -e '.[export]'"


def import_ctranslate2() -> Any:
    """The `ctranslate2` module, or a one-line error saying how to install it."""
    try:
        import ctranslate2
    except ModuleNotFoundError:
        raise ExportError(
            f"the CTranslate2 engine needs the ctranslate2 package: install the export extra "
            f"(`{INSTALL_HINT}`, or `make setup`)"
        ) from None
    return ctranslate2


def vocabulary(tok: BPETokenizer) -> list[str]:
    """One unique string per token id: its readable text, else (a clash, e.g. a merge spelling
    "<0x41>", or text CTranslate2 cannot hold) `<id:N>`."""
    tokens, seen = [], set()
    for token_id in range(tok.vocab_size):
        text = tok.token_text(token_id)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = ""
        if not text or text in seen:
            text = f"<id:{token_id}>"
        seen.add(text)
        tokens.append(text)
    return tokens


@dataclass(frozen=True)
class ExportSummary:
    directory: Path
    quantization: str
    manifest: dict[str, Any]
    up_to_date: bool = False  # the directory held this export already: nothing was written


def export_checkpoint(
    checkpoint: str | Path,
    output_dir: str | Path,
    quantization: str = "float32",
    run: str | None = None,
    force: bool = False,
) -> ExportSummary:
    """Write `checkpoint` as a CTranslate2 model directory at `output_dir` (with `force`, over an
    existing one); `quantization` is CTranslate2's weight type (int8: int8 matrices, float32
    elsewhere)."""
    if quantization not in QUANTIZATIONS:
        raise ExportError(
            f"quantization={quantization!r} must be one of: {', '.join(QUANTIZATIONS)}"
        )
    ctranslate2 = import_ctranslate2()
    output_dir = Path(output_dir)
    state = load_checkpoint(checkpoint)
    if output_dir.exists() and not force:
        settings = {
            "source_sha256": state.get(DIGEST_KEY),
            "quantization": quantization,
            "ctranslate2_version": ctranslate2.__version__,
        }
        if settings["source_sha256"] is not None and _holds(output_dir, settings):
            return ExportSummary(output_dir, quantization, read_manifest(output_dir), True)
        raise ExportError(
            f"{output_dir} exists{_holding(output_dir)}; pass --force to replace it with this "
            f"export ({quantization}), or --output DIR to write this one elsewhere"
        )
    model, src_tok, tgt_tok, config = restore_for_inference(state, "cpu", origin=str(checkpoint))
    spec = transformer_spec(model, src_tok, tgt_tok, ctranslate2)
    spec.validate()
    spec.optimize(quantization=quantization)
    summary = CheckpointSummary.of(state, checkpoint)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "run": run,
        "checkpoint": str(checkpoint),
        "step": summary.step,
        "dev_bleu": summary.dev_bleu,
        "averaged_from": summary.averaged_from,
        "quantization": quantization,
        "ctranslate2_version": ctranslate2.__version__,
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
    spec.save(str(staging))
    manifest["model_sha256"] = file_sha256(staging / MODEL_FILE)
    src_tok.save(staging / TOKENIZER_FILES["src"])
    tgt_tok.save(staging / TOKENIZER_FILES["tgt"])
    with atomic_writer(staging / MANIFEST) as file:
        file.write((json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    give_file_modes(staging)  # whatever CTranslate2's writer gives its files
    if output_dir.exists():
        shutil.rmtree(output_dir)
    staging.rename(output_dir)
    return ExportSummary(output_dir, quantization, manifest)


def transformer_spec(
    model: Seq2SeqTransformer, src_tok: BPETokenizer, tgt_tok: BPETokenizer, ctranslate2: Any
) -> Any:
    """The `TransformerSpec` of `model`, its weights set, its vocabularies registered."""
    from ctranslate2.specs import common_spec, transformer_spec

    cfg = model.cfg
    activation = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}
    options = {
        "pre_norm": cfg.norm_first,
        "activation": activation[cfg.activation],
    }
    encoder_spec = transformer_spec.TransformerEncoderSpec(
        cfg.n_encoder_layers, cfg.n_heads, **options
    )
    # The heatmap's attention: the last layer's cross-attention, averaged over every head.
    decoder_spec = transformer_spec.TransformerDecoderSpec(
        cfg.n_decoder_layers,
        cfg.n_heads,
        alignment_layer=-1,
        alignment_heads=cfg.n_heads,
        **options,
    )
    spec = transformer_spec.TransformerSpec(encoder_spec, decoder_spec)
    spec.config.layer_norm_epsilon = LAYER_NORM_EPSILON
    spec.config.bos_token = BOS
    spec.config.decoder_start_token = BOS
    spec.config.eos_token = EOS
    # There is no unknown token (bytes spell any character); <pad> stands in, never an input.
    spec.config.unk_token = PAD

    weights = {name: tensor.detach().float().numpy() for name, tensor in model.state_dict().items()}
    positions = sinusoidal_positions(cfg.max_positions, cfg.d_model).numpy()
    _set_stack(spec.encoder, model.encoder, "encoder", weights, positions, cross=False)
    _set_stack(spec.decoder, model.decoder, "decoder", weights, positions, cross=True)
    spec.decoder.projection.weight = weights["output_proj.weight"]
    if model.output_proj.weight is model.decoder.embedding.token.weight:
        spec.decoder.projection.weight = spec.decoder.embeddings.weight  # one array: tied
    if model.encoder.embedding is model.decoder.embedding:
        spec.encoder.embeddings[0].weight = spec.decoder.embeddings.weight
    spec.register_source_vocabulary(vocabulary(src_tok))
    spec.register_target_vocabulary(vocabulary(tgt_tok))
    return spec


def _set_stack(
    spec: Any,
    stack: torch.nn.Module,
    prefix: str,
    weights: dict[str, np.ndarray],
    positions: np.ndarray,
    cross: bool,
) -> None:
    embeddings = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings
    embeddings.weight = weights[f"{prefix}.embedding.token.weight"]
    spec.scale_embeddings = True  # × √d_model
    spec.position_encodings.encodings = positions
    if hasattr(spec, "layer_norm"):  # pre-LN only
        _set_norm(spec.layer_norm, weights, f"{prefix}.final_norm")
    for index, layer_spec in enumerate(spec.layer):
        layer = f"{prefix}.layers.{index}"
        _set_attention(layer_spec.self_attention, weights, f"{layer}.self_attn", fused=True)
        _set_norm(layer_spec.self_attention.layer_norm, weights, f"{layer}.self_attn_residual.norm")
        if cross:
            _set_attention(layer_spec.attention, weights, f"{layer}.cross_attn", fused=False)
            _set_norm(layer_spec.attention.layer_norm, weights, f"{layer}.cross_attn_residual.norm")
        _set_norm(layer_spec.ffn.layer_norm, weights, f"{layer}.feed_forward_residual.norm")
        _set_linear(layer_spec.ffn.linear_0, weights, f"{layer}.feed_forward.expand")
        _set_linear(layer_spec.ffn.linear_1, weights, f"{layer}.feed_forward.contract")


def _set_attention(spec: Any, weights: dict[str, np.ndarray], name: str, fused: bool) -> None:
    """Self-attention: the packed (q, k, v) projection whole. Cross-attention: q, then (k, v)."""
    weight, bias = weights[f"{name}.in_proj.weight"], weights[f"{name}.in_proj.bias"]
    if fused:
        spec.linear[0].weight, spec.linear[0].bias = weight, bias
    else:
        d_model = weight.shape[1]
        spec.linear[0].weight, spec.linear[0].bias = weight[:d_model], bias[:d_model]
        spec.linear[1].weight, spec.linear[1].bias = weight[d_model:], bias[d_model:]
    _set_linear(spec.linear[-1], weights, f"{name}.out_proj")


def _set_linear(spec: Any, weights: dict[str, np.ndarray], name: str) -> None:
    spec.weight, spec.bias = weights[f"{name}.weight"], weights[f"{name}.bias"]


def _set_norm(spec: Any, weights: dict[str, np.ndarray], name: str) -> None:
    spec.gamma, spec.beta = weights[f"{name}.weight"], weights[f"{name}.bias"]


def _holding(directory: Path) -> str:
    """What the export at `directory` holds, for a refusal to write over it: its quantization
    and step (nothing where it is no export this version reads)."""
    try:
        manifest = read_manifest(directory)
    except ExportError:
        return ""
    return f" (an export of step {manifest['step']}, {manifest['quantization']})"


def _holds(directory: Path, settings: dict[str, Any]) -> bool:
    """Whether the export at `directory` is whole and made with `settings` (its manifest's keys):
    an export rerun with them has nothing to do."""
    try:
        manifest = read_manifest(directory)
        check_model_file(directory, manifest)
    except ExportError:
        return False
    return all(manifest.get(key) == value for key, value in settings.items())


def check_model_file(directory: str | Path, manifest: dict[str, Any]) -> None:
    """Refuse an export whose model.bin differs from the sha256 its manifest saved (an export
    from before that digest is taken as it is)."""
    saved = manifest.get("model_sha256")
    if saved is None:
        return
    path = Path(directory) / MODEL_FILE
    if not path.is_file():
        raise ExportError(f"{path} does not exist: the export is incomplete; export it again")
    actual = file_sha256(path)
    if actual != saved:
        raise ExportError(
            f"{path} is damaged: it does not match the sha256 its {MANIFEST} saved "
            f"({actual[:12]}… != {saved[:12]}…); export it again"
        )


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of an export directory, with a one-line error for anything else."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise ExportError(
            f"{directory} is not a CTranslate2 export (no {MANIFEST}); "
            '`make export ARGS="--run NAME"` writes one from the run NAME\'s model, '
            '`make export ARGS="--checkpoint FILE --output DIR"` from a checkpoint'
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportError(f"{path} cannot be read: {error}") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ExportError(
            f"{path} is not a version-{VERSION} export of this project "
            f"(format {manifest.get('format')!r}, version {manifest.get('version')!r})"
        )
    return manifest


def load_tokenizers(directory: str | Path, manifest: dict[str, Any]) -> tuple[BPETokenizer, ...]:
    """The export's source and target tokenizers, checked against the manifest's hashes."""
    tokenizers = []
    for side in ("src", "tgt"):
        entry = manifest["tokenizers"][side]
        tok = BPETokenizer.load(Path(directory) / entry["file"])
        if tok.hash != entry["sha256"]:
            raise ExportError(
                f"{directory}: {entry['file']} does not match the manifest's hash "
                f"({tok.hash[:12]}… != {entry['sha256'][:12]}…); the file was altered"
            )
        tokenizers.append(tok)
    return tuple(tokenizers)
