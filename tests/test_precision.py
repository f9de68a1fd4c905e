"""Device and precision selection: what `auto` picks, and what it refuses or warns about."""

from __future__ import annotations

import logging

import pytest
import torch

from llm_from_scratch import precision as precision_module
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.precision import select_precision

CPU = torch.device("cpu")


@pytest.fixture
def fresh_measurement():
    """`auto`'s timing is cached per process; each test sets its own."""
    precision_module.cpu_bf16_is_faster.cache_clear()
    yield
    precision_module.cpu_bf16_is_faster.cache_clear()


@pytest.mark.parametrize(
    ("native_bf16", "bf16_speedup", "expected"),
    [(True, 2.3, "bf16"), (True, 1.1, "fp32"), (True, 0.5, "fp32"), (False, None, "fp32")],
)
def test_auto_on_cpu_uses_bf16_only_where_native_and_faster(
    monkeypatch, fresh_measurement, native_bf16, bf16_speedup, expected
):
    def measured_speedup() -> float:
        assert native_bf16, "emulated bf16 must not even be timed"
        return bf16_speedup

    monkeypatch.setattr(precision_module, "cpu_supports_bf16", lambda: native_bf16)
    monkeypatch.setattr(precision_module, "cpu_bf16_speedup", measured_speedup)
    precision = select_precision("auto", CPU)
    assert precision.name == expected
    assert precision.dtype == (torch.bfloat16 if expected == "bf16" else None)
    assert not precision.grad_scaler().is_enabled()


def test_matmul_rate_counts_two_flops_per_multiply_add(monkeypatch):
    clock = iter([10.0, 12.0])  # the timed products take 2 s
    monkeypatch.setattr(precision_module.time, "perf_counter", lambda: next(clock))
    rate = precision_module.matmul_rate(torch.float32, size=8, repeats=3)
    assert rate == 2 * 8**3 * 3 / 2.0


def test_the_bf16_probe_times_one_thread_and_restores_the_count(monkeypatch):
    timed_on = []

    def rate(dtype, size, repeats):
        timed_on.append(torch.get_num_threads())
        return 2.0 if dtype == torch.bfloat16 else 1.0

    monkeypatch.setattr(precision_module, "matmul_rate", rate)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert precision_module.cpu_bf16_speedup(rounds=2) == 2.0
        assert timed_on == [1] * 4 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


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
