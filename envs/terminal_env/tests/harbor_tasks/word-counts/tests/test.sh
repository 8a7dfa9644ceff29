#!/bin/bash
# Three named rewards: the file exists, it is a JSON object, every count is right.
cd /app
python3 - <<'PY'
import json, re
from pathlib import Path

expected = {}
for word in re.split(r"[^a-z]+", Path("/app/notes.txt").read_text().lower()):
    if word:
        expected[word] = expected.get(word, 0) + 1
out = Path("/app/counts.json")
exists = out.is_file()
try:
    got = json.loads(out.read_text()) if exists else None
except ValueError:
    got = None
is_object = isinstance(got, dict)
correct = is_object and got == expected
rewards = {"exists": float(exists), "json_object": float(is_object), "counts": float(correct)}
rewards["reward"] = 1.0 if correct else 0.0
Path("/logs/verifier/reward.json").write_text(json.dumps(rewards))
print(rewards)
PY
