#!/bin/bash
# Two named rewards: the rows in the right order, the exact github format.
python3 - <<'PY'
import csv, json
from pathlib import Path
from tabulate import tabulate

rows = list(csv.reader(open("/app/scores.csv", newline="")))
header, body = rows[0], sorted(rows[1:], key=lambda r: (-int(r[2]), r[0]))
want = tabulate(body, headers=header, tablefmt="github").strip()
out = Path("/app/scores.md")
got = out.read_text().strip() if out.is_file() else ""
names = [line.split("|")[1].strip() for line in got.splitlines()[2:] if line.count("|") >= 2]
rewards = {"order": float(names == [r[0] for r in body]), "format": float(got == want)}
rewards["reward"] = 1.0 if got == want else 0.0
Path("/logs/verifier/reward.json").write_text(json.dumps(rewards))
print(rewards)
PY
