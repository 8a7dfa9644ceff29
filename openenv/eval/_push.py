"""``openenv eval push DIR REPO``: a run folder as a Hugging Face Hub dataset.

What goes up: ``data/train.parquet`` (the rows of ``load_dataset(DIR)``: one episode
each, its nested parts, turns included, as JSON text, so every row has the same
columns whatever the env's observations hold), the run's ``results.json``,
``run.json`` and ``report.html`` where the folder has them, and a ``README.md`` card
whose front matter names the parquet file as the data. ``datasets.load_dataset(REPO)``
then gives the rows ``openenv.eval.load_dataset(DIR)`` gives. Needs the ``hub`` and
``eval`` extras.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .._exceptions import EvalError
from .._extras import require
from ._trajectory import FILE, load_dataset

DATA = "data/train.parquet"
_BESIDE = ("results.json", "run.json", "report.html")

_CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: "{data}"
---

# openenv eval: {env} / {policy}

Trajectories of `openenv eval` (one episode a row), pushed with `openenv eval push`.

- **Episodes:** {episodes} ({errors} errors)
- **pass@k:** {pass_at_k}
- **Mean reward:** {mean_reward}

`turns`, `final_observation` and `reward_breakdown` are JSON text (`json.loads` them);
`results.json` holds every figure of the run, `report.html` its report.

```python
from datasets import load_dataset
ds = load_dataset("{repo}", split="train")
```
"""


def _card(folder: Path, repo_id: str) -> str:
    results: dict[str, Any] = {}
    if (folder / "results.json").is_file():
        results = json.loads((folder / "results.json").read_text())
    return _CARD.format(
        data=DATA,
        env=results.get("env", ""),
        policy=results.get("policy", ""),
        episodes=results.get("episodes", "?"),
        errors=results.get("errors", "?"),
        pass_at_k=json.dumps(results.get("pass_at_k", {})),
        mean_reward=results.get("mean_reward"),
        repo=repo_id,
    )


def push_to_hub(
    run_dir: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    commit_message: str | None = None,
    token: str | None = None,
) -> str:
    """Upload the run folder ``run_dir`` as the Hub dataset ``repo_id``; returns its URL."""
    folder = Path(run_dir)
    if not (folder / FILE).is_file():
        raise EvalError(f"no {FILE} in {run_dir}: not a run folder of `openenv eval`")
    hub = require("huggingface_hub", extra="hub", feature="openenv eval push")
    dataset = load_dataset(folder)
    with tempfile.TemporaryDirectory(prefix="openenv-eval-push-") as tmp:
        staging = Path(tmp)
        (staging / DATA).parent.mkdir(parents=True)
        _quiet_parquet(dataset, staging / DATA)
        for name in _BESIDE:
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        (staging / "README.md").write_text(_card(folder, repo_id), encoding="utf-8")
        api = hub.HfApi(token=token)
        api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(staging),
            repo_id=repo_id,
            repo_type="dataset",
            commit_message=commit_message or f"openenv eval: {dataset.num_rows} episodes",
        )
    return f"https://huggingface.co/datasets/{repo_id}"


def _quiet_parquet(dataset: Any, path: Path) -> None:
    """``dataset.to_parquet(path)`` without datasets' progress bar on stderr."""
    datasets = require("datasets", extra="eval", feature="openenv eval push")
    was = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        dataset.to_parquet(str(path))
    finally:
        if was:
            datasets.enable_progress_bars()
