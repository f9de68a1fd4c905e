#!/usr/bin/env bash
# The GPU checks, in under ten minutes: the CUDA tests, the GPU benchmark (Transformer base in
# bf16, its MFU), and five minutes of `experiment=kftt_gpu` end to end. Each part has its own
# time limit, so that a hang fails the check instead of overrunning it; the first failure exits
# non-zero. CI has no GPU: run it by hand where there is one (`scripts/check_gpu.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if ! "$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
    echo "check_gpu: no CUDA device here: nothing to check" >&2
    exit 1
fi
# The tests that skip without a GPU (their files say so at the top).
timeout 150 "$PY" -m pytest -q tests/training/test_cuda.py tests/model/test_cuda.py \
    tests/decoding/test_cuda.py
timeout 90 "$PY" scripts/bench_gpu.py --models base --precision bf16
# The budget counts the data and tokenizer preparation too; the margin is for the final scoring.
# A run of its own each time: the name of a finished run would train nothing.
name="kftt_gpu_check_$(date -u +%Y%m%dT%H%M%S)"
timeout 330 make train ARGS="experiment=kftt_gpu training.max_time=5m name=$name"
