#!/bin/bash
cd /app
python3 - <<'PY'
import json, re
counts = {}
for word in re.split(r"[^a-z]+", open("notes.txt").read().lower()):
    if word:
        counts[word] = counts.get(word, 0) + 1
json.dump(counts, open("counts.json", "w"))
PY
