"""Shared helpers for the tests of tasks with an image of their own (imported by plain name)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from terminal_env import RunAction, SubmitAction, TerminalEnv, TerminalObservation

from openenv._exceptions import ProviderError

TASKS = Path(__file__).with_name("harbor_tasks")
LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"

#: A plausible wrong answer per test task (a shell command): it must score below the
#: solution, in this env (test_terminal_harbor_images.py) and in Harbor (test_harbor_client.py).
WRONG = {
    "word-counts": 'python3 -c "import json; json.dump({w: 1 for w in'
    " open('/app/notes.txt').read().split()},"
    " open('/app/counts.json', 'w'))\"",
    "paid-totals": "jq -r 'group_by(.customer)[] | \"\\(.[0].customer) \\(map(.amount) | add)\"'"
    " /app/orders.json > /app/totals.txt",
    "fix-backup-script": "sed -i 's/for f in $(ls $src\\/\\*.conf)/for f in \"$src\"\\/*.conf/'"
    " /app/backup.sh",
    # the nested tables left out
    "toml-config": "printf 'name = \"ledger\"\\ndebug = false\\nworkers = 4\\n' > /app/settings.toml",
    # the right format, the file's order
    "markdown-table": 'python3 -c "import csv; from tabulate import tabulate;'
    " rows = list(csv.reader(open('/app/scores.csv')));"
    " open('/app/scores.md', 'w').write(tabulate(rows[1:], headers=rows[0], tablefmt='github'))\"",
    # one of the two bugs fixed: take() still changes the ledger it is given
    "fix-unit-tests": "sed -i 's/if count > have + 1:/if count > have:/' /app/inventory/__init__.py",
    # cancelled orders counted
    "sqlite-top-customer": "python3 -c \"import sqlite3; db = sqlite3.connect('/app/shop.db');"
    " rows = db.execute('SELECT city, name, MAX(t) FROM (SELECT c.city, c.name, SUM(o.cents) t"
    " FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id) GROUP BY city ORDER BY city');"
    " open('/app/top.csv', 'w').write('city,name,cents\\n'"
    " + ''.join(f'{a},{b},{c}\\n' for a, b, c in rows))\"",
    # the other key in the innermost archive
    "nested-archive": "cd /tmp && tar -xzf /app/bundle.tar.gz && tar -xf parts.tar"
    " && tar -xzf inner/vault.tar.gz && cp vault/keys/old.key /app/key.txt",
    # the service's first page only
    "api-count": 'python3 -c "import json, urllib.request;'
    " items = json.load(urllib.request.urlopen('http://api:8000/items?page=1', timeout=10))['items'];"
    " ok = [i for i in items if i['status'] == 'ok']; size = sum(i['size'] for i in ok);"
    " open('/app/answer.txt', 'w').write(f'{len(ok)} {size}')\"",
    # a shallow merge: nested objects replaced, nulls kept
    "merge-configs": "python3 -c \"import json; b = json.load(open('/app/base.json'));"
    " b.update(json.load(open('/app/override.json'))); json.dump(b, open('/app/merged.json', 'w'))\"",
}


def docker_base() -> str:
    """``python:3.11-slim`` mapped to the offline local base where the engine has it;
    skips (with the reason) where no Docker engine answers."""
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(f"tasks with an image of their own need a Docker engine: {exc}")
    try:
        local = bool(client.images.list(name=LOCAL_BASE_IMAGE))
    finally:
        client.close()
    return f"python:3.11-slim={LOCAL_BASE_IMAGE}" if local else ""


def owned(owner: str) -> list[str]:
    """Names of the containers and networks that carry the server's owner label ``owner``."""
    from terminal_env._container import OWNER_LABEL

    from openenv.containers._docker import docker_client

    client = docker_client()
    try:
        # one being removed meanwhile (by this server) is gone: skipped, not a NotFound
        found = client.containers.list(
            all=True, filters={"label": f"{OWNER_LABEL}={owner}"}, ignore_removed=True
        )
        found += client.networks.list(filters={"label": f"{OWNER_LABEL}={owner}"})
        return [x.name for x in found]
    finally:
        client.close()


def copy_task(name: str, dest: Path, *, toml_extra: str = "", new_name: str | None = None) -> Path:
    """A copy of a test task under ``dest``, ``toml_extra`` appended to its task.toml."""
    out = dest / (new_name or name)
    shutil.copytree(TASKS / name, out)
    if toml_extra:
        with (out / "task.toml").open("a") as f:
            f.write("\n" + toml_extra)
    return out


def with_compose(dest: Path, new_name: str, compose: str) -> Path:
    """A copy of ``api-count`` named ``new_name`` with ``compose`` as its docker-compose.yaml."""
    task = copy_task("api-count", dest, new_name=new_name)
    (task / "environment" / "docker-compose.yaml").write_text(compose)
    return task


def compose_refusal(dest: Path, compose: str, new_name: str) -> str:
    """Why a copy of ``api-count`` with ``compose`` as its docker-compose.yaml is not
    served, beside an intact ``api-count`` that still is."""
    from terminal_env._tasks import HarborTaskSet

    copy_task("api-count", dest)
    with_compose(dest, new_name, compose)
    tasks = HarborTaskSet(dest)
    tasks.load()
    assert [tasks.get(i).id for i in range(tasks.num_tasks())] == ["api-count"]
    return tasks.broken[new_name]


@asynccontextmanager
async def task_env(tasks_dir: Path, base: str, **kw: Any) -> AsyncIterator[TerminalEnv]:
    env = TerminalEnv(sandbox="none", tasks_dir=str(tasks_dir), base_images=base, pool_size=0, **kw)
    try:
        yield env
    finally:
        await env.close()


async def sh(env: TerminalEnv, command: str, timeout_s: float = 60) -> TerminalObservation:
    return await env.step(RunAction(command=command, timeout_s=timeout_s))


async def episode(env: TerminalEnv, task_id: str, *commands: str) -> TerminalObservation:
    """Reset to ``task_id``, run ``commands`` in the shell, submit; the submit's observation."""
    await env.reset(options={"task_id": task_id})
    for command in commands:
        await sh(env, command)
    return await env.step(SubmitAction())
