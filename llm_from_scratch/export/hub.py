"""Uploading a transformers export to the Hugging Face Hub with `huggingface_hub`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_from_scratch.errors import UserError
from llm_from_scratch.export.transformers_model import INSTALL_HINT, read_manifest


class HubError(UserError):
    """An upload that cannot start or did not succeed."""


def hub_api() -> Any:
    """A `huggingface_hub.HfApi` (its token: `hf auth login`'s, or HF_TOKEN)."""
    try:
        from huggingface_hub import HfApi
    except ModuleNotFoundError:
        raise HubError(f"uploading needs the huggingface_hub package (`{INSTALL_HINT}`)") from None
    return HfApi()


def push_to_hub(directory: str | Path, repo_id: str, private: bool = False) -> str:
    """Create the model repository `repo_id` (user/name) if it is not there, upload the export
    `directory` as one commit, and return the repository's URL."""
    directory = Path(directory)
    manifest = read_manifest(directory)  # only a whole export is uploaded
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise HubError(f"--push-to-hub {repo_id!r} must name a repository as USER/NAME")
    api = hub_api()
    try:
        url = api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(directory),
            repo_id=repo_id,
            repo_type="model",
            commit_message=f"Upload {manifest['model_class']} exported by llm-from-scratch "
            f"(step {manifest.get('step')})",
        )
    except Exception as error:  # the Hub's HTTP, auth and validation errors
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise HubError(
            f"uploading {directory} to {repo_id} failed: {type(error).__name__}: {first_line}"
        ) from None
    return str(url)
