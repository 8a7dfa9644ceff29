#!/bin/bash
# Named rewards: the merged data, and the inputs left untouched.
python3 - <<'PY'
import hashlib, json
from pathlib import Path

want = {
    "service": {"name": "billing", "port": 9090, "tls": {"enabled": True, "cert": "none"}},
    "log": {"level": "info", "targets": ["syslog"]},
    "limits": {"rps": 100},
    "region": "eu-north",
}
try:
    got = json.loads(Path("/app/merged.json").read_text())
except (OSError, ValueError):
    got = None
inputs = {
    "base.json": "b5e8b5a6",
    "override.json": "ce0d018c",
}
kept = all(
    hashlib.sha256(Path("/app", name).read_bytes()).hexdigest()[:8] == digest
    for name, digest in inputs.items()
    if Path("/app", name).is_file()
) and all(Path("/app", name).is_file() for name in inputs)
rewards = {"merged": float(got == want), "inputs_kept": float(kept)}
rewards["reward"] = 1.0 if got == want and kept else 0.0
Path("/logs/verifier/reward.json").write_text(json.dumps(rewards))
print(rewards)
PY
