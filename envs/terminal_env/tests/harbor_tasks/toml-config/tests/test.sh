#!/bin/bash
# The TOML must parse and hold exactly the JSON's data.
python3 - <<'PY'
import json, tomllib
from pathlib import Path

want = json.loads(Path("/app/settings.json").read_text())
try:
    got = tomllib.loads(Path("/app/settings.toml").read_text())
except (OSError, ValueError) as exc:
    got = None
    print("unreadable:", exc)
ok = got == want
print("match" if ok else f"wanted {want}\ngot {got}")
Path("/logs/verifier/reward.txt").write_text("1\n" if ok else "0\n")
PY
