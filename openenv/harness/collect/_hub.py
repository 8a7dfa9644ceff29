"""A collected dataset on the Hugging Face Hub: its dataset card, and the upload."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..._extras import require
from ._record import METADATA_FILENAME, RESULTS_FILENAME

__all__ = ["README_FILENAME", "build_dataset_readme", "push_to_hf_hub"]

README_FILENAME = "README.md"

#: The card's front matter names results.jsonl as the one data file (the Hub's dataset
#: viewer would otherwise read metadata.json as data too).
_FRONT_MATTER = f"""---
configs:
- config_name: default
  data_files:
  - split: train
    path: "{RESULTS_FILENAME}"
---"""

_SCHEMA = """## Schema

One episode a line of `results.jsonl`:

- `episode_id`: string
- `messages`: the chat transcript (the column TRL's `SFTTrainer` reads)
- `reward`: float, the env's own; `done`: bool
- `tool_trace`: list of `{tool_name, arguments, result}`
- `metrics`, `verify_metrics`, `artifacts`: objects
- `task`, `extra`: what the collector was given, if anything

## Load

```python
from datasets import load_dataset
ds = load_dataset("<user>/<repo>", split="train")
```
"""


def _episode_count(results: Path) -> int:
    if not results.exists():
        return 0
    with results.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def _metadata(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def build_dataset_readme(output_dir: Path | str) -> str:
    """The dataset card for a collect folder: front matter, episode count, run metadata, schema."""
    out = Path(output_dir)
    parts = [
        _FRONT_MATTER,
        "",
        "# OpenEnv rollouts",
        "",
        "Collected with OpenEnv's `openenv.core.harness.collect`.",
        "",
        f"- **Episodes:** {_episode_count(out / RESULTS_FILENAME)}",
    ]
    metadata = _metadata(out / METADATA_FILENAME)
    if metadata:
        parts += ["- **Run metadata:**", "", "  | key | value |", "  | --- | --- |"]
        parts += [f"  | `{key}` | `{value}` |" for key, value in metadata.items()]
    return "\n".join([*parts, "", _SCHEMA])


def push_to_hf_hub(
    output_dir: Path | str,
    repo_id: str,
    *,
    private: bool = False,
    commit_message: str | None = None,
    token: str | None = None,
) -> str:
    """Upload a collect folder (with a fresh ``README.md`` card) as the dataset ``repo_id``.

    Returns the dataset's URL. Needs the ``hub`` extra.

    Raises:
        FileNotFoundError: the folder has no ``results.jsonl``.
    """
    out = Path(output_dir)
    results = out / RESULTS_FILENAME
    if not results.exists():
        raise FileNotFoundError(f"{results} does not exist: collect episodes before pushing")
    hub = require("huggingface_hub", extra="hub", feature="push_to_hf_hub")
    (out / README_FILENAME).write_text(build_dataset_readme(out), encoding="utf-8")
    message = commit_message or f"Add {_episode_count(results)} collected episode(s)"
    api = hub.HfApi(token=token)
    api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(folder_path=str(out), repo_id=repo_id, repo_type="dataset", commit_message=message)
    return f"https://huggingface.co/datasets/{repo_id}"
