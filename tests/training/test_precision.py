"""Device and precision selection: what `auto` picks, and what it refuses or warns about."""

from __future__ import annotations

import logging

import pytest
import torch

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.training import precision as precision_module
from llm_from_scratch.training.precision import select_precision

CPU = torch.device("cpu")


@pytest.mark.parametrize(("native_bf16", "expected"), [(True, "bf16"), (False, "fp32")])
def test_auto_on_cpu_uses_bf16_only_where_native(monkeypatch, native_bf16, expected):
    monkeypatch.setattr(precision_module, "cpu_supports_bf16", lambda: native_bf16)
    precision = select_precision("auto", CPU)
    assert precision.name == expected
    assert precision.dtype == (torch.bfloat16 if native_bf16 else None)
    assert not precision.grad_scaler().is_enabled()


def test_fp32_autocast_leaves_matmuls_in_fp32():
    with select_precision("fp32", CPU).autocast():
        product = torch.ones(2, 2) @ torch.ones(2, 2)
    assert product.dtype == torch.float32


def test_fp16_on_cpu_is_refused():
    with pytest.raises(ConfigError, match="fp16 needs a GPU"):
        select_precision("fp16", CPU)


@pytest.mark.parametrize("native_bf16", [True, False])
def test_explicit_bf16_warns_only_where_emulated(monkeypatch, caplog, native_bf16):
    monkeypatch.setattr(precision_module, "cpu_supports_bf16", lambda: native_bf16)
    with caplog.at_level(logging.WARNING, logger=precision_module.__name__):
        precision = select_precision("bf16", CPU)
    assert precision.name == "bf16"  # the user's choice stands; they are told what it costs
    warned = any("no native bf16" in record.getMessage() for record in caplog.records)
    assert warned is not native_bf16
