"""The one device resolver: training, decoding and benchmarks all pick devices through it."""

from __future__ import annotations

import torch

from llm_from_scratch.errors import ConfigError


def resolve_device(name: str, key: str = "device") -> torch.device:
    """The device called `name`, checked to be usable here; `auto` is CUDA when available, else
    the CPU. `key` names the setting in the error message (e.g. `training.device`)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as error:
        raise ConfigError(f"{key}={name!r} is not usable: {str(error).splitlines()[0]}") from None
    return device
