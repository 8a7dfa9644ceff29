# ruff: noqa: E501  (a table of shell scripts, one per line where they fit)
"""Every shipped task's checks verify the end state its instruction asks for: beside
the reference solution (1.0, its episode done), at least two plausible fakes per task
and an empty attempt score less.

A fake is what an agent may type to get the reward without doing the task as asked:
a proxy the checks could mistake for the real state (a tag named like the branch, an
index flag hiding what was committed, a worker that exits before it is signalled, a
decoy directory with the right name, a tampered input script), or a shortcut that
looks right (a case-sensitive count, an unquoted fix, answers hard-coded for the
examples). Graders attacked directly (reward files, shadowed binaries, survivors)
are test_terminal_reward_hacking.py's. Each fake runs, like the solution, as a bash
script in the task's working directory of a fresh episode; the episodes of all tasks
share three environments (one per lane).

Fakes that score nothing at all are the env's canaries (``canaries.jsonl``, declared
in its openenv.yaml as ``capabilities.canaries``, replayed over the wire by
``openenv validate``'s ``semantic.canary_floor``): they live only in that file, and
this test reads it, plays each line's own actions, and holds each at the manifest's
floor (``range[0] + floor_margin``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _terminal_fixtures import LEVELS, run
from terminal_env import SubmitAction, TerminalEnv
from terminal_env._tasks import TASKS_DIR, TerminalTask, task_dirs
from terminal_env.models import TerminalAction

from openenv.authoring import load_manifest
from openenv.authoring._semantic_replay import read_canaries

TASKS = task_dirs(TASKS_DIR)
PACKAGE = Path(__file__).resolve().parents[1]
BLOCK = load_manifest(PACKAGE).validation_block()
#: The manifest's floor: a canary's reward must end at or below it.
FLOOR = BLOCK.reward.range[0] + BLOCK.reward.floor_margin
#: Task -> canary name -> its actions (the file ``semantic.canary_floor`` replays).
CANARIES: dict[str, dict[str, list[dict[str, Any]]]] = {}
for _name, _reset, _actions in read_canaries(PACKAGE / BLOCK.capabilities.canaries):
    CANARIES.setdefault(_reset["task_id"], {})[_name] = _actions
LEVEL = LEVELS[-1]
GIT = "git -c user.name=a -c user.email=a@example.com"

#: Task -> fake name -> the bash script typed in its working directory.
FAKES: dict[str, dict[str, str]] = {
    "count-errors": {
        "occurrences, not lines": "grep -o ERROR app.log | wc -l > errors.txt",
    },
    "create-hello": {
        "a trailing blank line": "printf 'Hello, terminal!\\n\\n' > hello.txt",
        "CRLF line ending": "printf 'Hello, terminal!\\r\\n' > hello.txt",
        "wrong name": "echo 'Hello, terminal!' > Hello.txt",
    },
    "csv-column-sum": {
        "no two decimals": "awk -F, 'NR>1{s+=$3} END{print s}' sales.csv > total.txt",
        "integer parts": "awk -F, 'NR>1{s+=int($3)} END{printf \"%.2f\\n\", s}' sales.csv > total.txt",
    },
    "dedupe-names": {
        "uniq without sort": "uniq names.txt > unique.txt",
        "only the names seen once": "sort names.txt | uniq -u > unique.txt",
    },
    "env-for-one-command": {
        "the script edited to say production": (
            "sed -i 's/${MODE:-unset}/production/' show_mode.sh; ./show_mode.sh > mode.out"
        ),
        "a shell variable, not exported": "MODE=production; ./show_mode.sh > mode.out",
    },
    "extract-secret": {
        "every file of the archive": "tar xzOf bundle.tar.gz > answer.txt",
        "the first code-like line": "tar xzOf bundle.tar.gz | grep -m1 XK > answer.txt",
    },
    "failing-scripts": {
        "paths, not names": "for f in checks/*.sh; do sh \"$f\" >/dev/null 2>&1 || echo \"$f\"; done > failed.txt",
        "scripts that mention exit": "grep -l exit checks/*.sh | xargs -n1 basename > failed.txt",
    },
    "find-large-files": {
        "paths from ./": "find . -path './data/*' -type f -size +10240c | sort > large.txt",
    },
    "fix-json-config": {
        "emptied": "echo '{}' > config.json",
    },
    "fix-permissions": {
        "world-writable": "chmod 777 run.sh private.key",
        "the key recreated empty": "chmod +x run.sh; rm private.key; touch private.key; chmod 600 private.key",
    },
    "fix-python-mean": {
        "mean fixed, median not": "sed -i 's|//|/|' stats.py",
    },
    "fix-shell-quoting": {
        "default added, still unquoted": "printf '#!/bin/bash\\necho Hello, ${1:-world}!\\n' > greet.sh",
        "the three examples hard-coded": (
            "cat > greet.sh <<'EOF'\n#!/bin/bash\ncase \"$1\" in\n"
            "  'Ada  Lovelace') echo 'Hello, Ada  Lovelace!' ;;\n  '') echo 'Hello, world!' ;;\n"
            "  *) echo Hello, $1! ;;\nesac\nEOF"
        ),
    },
    "fizzbuzz-script": {
        "the first 15 lines hard-coded": (
            "printf '#!/bin/bash\\nprintf \"%%s\\\\n\" 1 2 Fizz 4 Buzz Fizz 7 8 Fizz Buzz 11 Fizz 13 14 FizzBuzz"
            " | head -n \"$1\"\\n' > fizzbuzz.sh; chmod +x fizzbuzz.sh"
        ),
    },
    "git-feature-branch": {
        "the file left uncommitted": "cd repo && git checkout -qb feature && echo done > feature.txt",
        "the index differs from the commit": (
            f"cd repo && git checkout -qb feature && echo wrong > feature.txt && git add . && {GIT} commit -qm f && "
            "echo done > feature.txt && git update-index --assume-unchanged feature.txt"
        ),
    },
    "git-find-commit": {
        "the last commit": "git -C repo log -1 --format=%H > commit.txt",
    },
    "git-first-commit": {
        # app.py committed empty; the flag keeps git status quiet about it
        "an index flag hides the committed content": (
            f"cd repo && git init -q && cp app.py ../app.bak && : > app.py && git add -A && "
            f"{GIT} commit -qm 'initial commit' && cp ../app.bak app.py && rm ../app.bak && "
            "git update-index --assume-unchanged app.py"
        ),
        "a file replaced by git replace": (
            f"cd repo && git init -q && cp app.py ../app.bak && : > app.py && git add -A && "
            f"{GIT} commit -qm 'initial commit' && mv ../app.bak app.py && "
            "git replace $(git rev-parse HEAD:app.py) $(git hash-object -w app.py) && "
            "git update-index --skip-worktree app.py"
        ),
        "one file, the other ignored": (
            "cd repo && git init -q && echo app.py > .git/info/exclude && git add -A && "
            f"{GIT} commit -qm 'initial commit'"
        ),
    },
    "git-revert-bad-commit": {
        # the work tree fixed, an empty commit, and the flag keeps git status quiet
        "an index flag hides the uncommitted fix": (
            f"cd repo && echo 'print(2 + 2)' > calc.py && {GIT} commit -q --allow-empty -m revert && "
            "git update-index --assume-unchanged calc.py"
        ),
        "reset, then commits to make up the count": (
            f"cd repo && git reset -q --hard HEAD~1 && {GIT} commit -q --allow-empty -m a && "
            f"{GIT} commit -q --allow-empty -m b"
        ),
        "amended": f"cd repo && echo 'print(2 + 2)' > calc.py && {GIT} commit -q -a --amend -m 'tweak calc'",
    },
    "graceful-shutdown": {
        "writes the file and exits at once": (
            "printf '#!/bin/bash\\necho \"cleaned up\" > cleanup.txt\\nexit 0\\n' > worker.sh; chmod +x worker.sh"
        ),
        "writes the file at start, exits 0 on TERM": (
            "printf '#!/bin/bash\\ntrap \"exit 0\" TERM\\necho \"cleaned up\" > cleanup.txt\\n"
            "while :; do sleep 0.1; done\\n' > worker.sh; chmod +x worker.sh"
        ),
        "ignores TERM": (
            "printf '#!/bin/bash\\ntrap \"\" TERM\\nwhile :; do sleep 0.1; done\\n' > worker.sh; chmod +x worker.sh"
        ),
    },
    "ini-edit": {
        "both ports changed": "sed -i 's/port = 8080/port = 9090/' settings.ini",
        "the first port changed": "sed -i '0,/port = 8080/s//port = 9090/' settings.ini",
    },
    "json-active-users": {
        "JSON strings": (
            "python3 -c 'import json; [print(json.dumps(u[\"name\"])) for u in json.load(open(\"users.json\")) "
            "if u[\"active\"]]' > active.txt"
        ),
    },
    "make-archive": {
        "paths without project/": "tar czf backup.tar.gz -C project .",
        "not compressed": "tar cf backup.tar.gz project",
        "the files emptied first": "truncate -s 0 project/src/main.py && tar czf backup.tar.gz project",
    },
    "most-frequent-word": {
        "case-sensitive": (
            "tr -cs 'A-Za-z' '\\n' < story.txt | grep . | sort | uniq -c | sort -rn | head -n 1 "
            "| awk '{print tolower($2)}' > word.txt"
        ),
        "case of the first seen": (
            "tr -cs 'A-Za-z' '\\n' < story.txt | grep . | sort -f | uniq -ci | sort -rn | head -n 1 "
            "| awk '{print $2}' > word.txt"
        ),
    },
    "organize-by-extension": {
        "copied, not moved": "cd inbox && for f in *.*; do mkdir -p \"${f##*.}\"; cp \"$f\" \"${f##*.}/\"; done",
        "empty files in place": "cd inbox && mkdir txt log csv && touch txt/a.txt txt/c.txt log/b.log log/e.log csv/d.csv && rm -f *.*",
    },
    "python-sum-args": {
        "the examples hard-coded": "echo 'import sys; print(6 if len(sys.argv) > 1 else 0)' > sum.py",
        "floats": "echo 'import sys; print(sum(float(a) for a in sys.argv[1:]))' > sum.py",
    },
    "rename-lowercase": {
        "lowercase copies beside the originals": "cd photos && for f in *; do cp -n \"$f\" \"$(echo \"$f\" | tr A-Z a-z)\"; done",
        "new empty files": (
            "cd photos && for f in *; do l=$(echo \"$f\" | tr A-Z a-z); [ \"$f\" = \"$l\" ] || { rm \"$f\"; touch \"$l\"; }; done"
        ),
        "links with lowercase names": (
            "cd photos && mkdir ../orig && mv Beach.PNG IMG_001.JPG ../orig && "
            "ln -s ../orig/Beach.PNG beach.png && ln -s ../orig/IMG_001.JPG img_001.jpg"
        ),
    },
    "replace-spelling": {
        "every file": "find docs -type f -exec sed -i 's/colour/color/g' {} +",
        "the first per line": "find docs -name '*.md' -exec sed -i 's/colour/color/' {} +",
    },
    "rotate-backups": {
        "by file time": (
            "printf '#!/bin/bash\\ncd \"$1\" || exit 1\\nls -t backup-*.tar | tail -n +4 | xargs -r rm --\\n' > rotate.sh; "
            "chmod +x rotate.sh"
        ),
        "every file, not only backups": (
            "printf '#!/bin/bash\\ncd \"$1\" || exit 1\\nls | sort | head -n -3 | xargs -r rm --\\n' > rotate.sh; "
            "chmod +x rotate.sh"
        ),
        "an unquoted directory": (
            "printf '#!/bin/bash\\ncd $1 || exit 1\\nls backup-*.tar | sort | head -n -3 | xargs -r rm --\\n' > rotate.sh; "
            "chmod +x rotate.sh"
        ),
    },
    "symlink-latest": {
        "a decoy directory of the right name": (
            "mkdir -p decoy/v1.10 && echo 1.10 > decoy/v1.10/VERSION && ln -s decoy/v1.10 current"
        ),
        "sorted as text": "ln -sfn \"releases/$(ls releases | sort | tail -n 1)\" current",
        "to the VERSION file": "ln -s releases/v1.10/VERSION current",
    },
    "timeout-hang": {
        "killed, not timed out": "timeout -s KILL 1 ./hang.sh; echo $? > status.txt",
        "the script edited to end": "echo 'exit 124' >> hang.sh; sed -i 's/while/false \\&\\& while/' hang.sh; ./hang.sh; echo $? > status.txt",
    },
    "top-ips": {
        "with their counts": "awk '{print $1}' access.log | sort | uniq -c | sort -rn | head -n 3 > top3.txt",
        "sorted as text": "awk '{print $1}' access.log | sort -u | head -n 3 > top3.txt",
    },
}


def test_every_task_has_two_fakes_or_more() -> None:
    assert sorted(FAKES) == sorted(p.name for p in TASKS)
    assert all(len(fakes) + len(CANARIES.get(task, {})) >= 2 for task, fakes in FAKES.items())


def test_the_canaries_are_fakes_of_shipped_tasks_each_run_then_submitted() -> None:
    assert len(CANARIES) >= 5
    assert set(CANARIES) <= set(FAKES)
    for task, canaries in CANARIES.items():
        assert not set(canaries) & set(FAKES[task]), f"{task}: a fake both here and in canaries.jsonl"
        for actions in canaries.values():
            parsed = [TerminalAction.model_validate(a).root for a in actions]
            assert [a.type for a in parsed] == ["run", "submit"]


async def test_every_solution_scores_one_and_each_fake_and_an_empty_attempt_less() -> None:
    """The reference solution ends its episode with 1.0; each fake, and an empty attempt
    (submitted at once, nothing typed), scores less (each in a fresh episode); each
    canary, its own actions played, ends at the manifest's floor or below."""
    lanes = 3  # episodes in flight at once (each waits mostly on its processes)
    results = await asyncio.gather(*(_lane(TASKS[i::lanes]) for i in range(lanes)))
    assert [failure for lane in results for failure in lane] == []


async def _lane(paths: Sequence[Path]) -> list[str]:
    env = TerminalEnv(sandbox=LEVEL)
    failures = []
    try:
        for path in paths:
            task = TerminalTask.from_dir(path)
            assert not task.missing_tools, f"{task.id} needs {task.missing_tools} (scripts/setup.sh)"
            attempts = {"solution": task.solution.read_text(), "an empty attempt": None, **FAKES[task.id]}
            for name, script in attempts.items():
                await env.reset(options={"task_id": task.id})
                if script is not None:
                    await env.step(run(f"bash -s <<'__ATTEMPT__'\n{script}\n__ATTEMPT__", timeout_s=60))
                done = await env.step(SubmitAction())
                passed = [t["name"] for t in done.metadata["reward_breakdown"]["tests"] if t["passed"]]
                if (done.reward == 1.0) != (name == "solution") or not done.done:
                    failures.append(f"{task.id}: {name!r} scored {done.reward}, done={done.done} (passed {passed})")
            for name, actions in CANARIES.get(task.id, {}).items():
                await env.reset(options={"task_id": task.id})
                for action in actions:
                    done = await env.step(TerminalAction.model_validate(action).root)
                if done.reward is None or done.reward > FLOOR or not done.done:
                    failures.append(f"{task.id}: canary {name!r} scored {done.reward} (floor {FLOOR:g}), done={done.done}")
    finally:
        await env.close()
    return failures
