#!/bin/bash
# Harbor's verifier for this task: each check of checks.toml (beside this file) runs on
# its own from the working directory; the reward is the fraction that passed. The
# terminal env runs the same checks itself, sandboxed, and does not use this file.
python3 - "$(dirname "$0")/checks.toml" <<'PY'
import os, subprocess, sys, tomllib

checks = tomllib.load(open(sys.argv[1], "rb"))["check"]
env = dict(os.environ, **{'PYTHONSAFEPATH': '1', 'PYTHONNOUSERSITE': '1', 'GIT_NO_REPLACE_OBJECTS': '1', 'GIT_CONFIG_GLOBAL': '/dev/null', 'GIT_CONFIG_NOSYSTEM': '1'})
passed = 0
for i, check in enumerate(checks, 1):
    try:
        done = subprocess.run(["bash", "-c", check["run"]], capture_output=True, env=env, timeout=30)
    except subprocess.TimeoutExpired:
        ok = False
    else:
        want = check.get("stdout")
        ok = done.returncode == 0 if want is None else done.stdout.rstrip(b"\n") == want.encode()
    passed += ok
    print("ok" if ok else "not ok", i, "-", check["name"])
with open("/logs/verifier/reward.txt", "w") as f:
    f.write(f"{passed / len(checks)!r}\n")  # every digit: the same float as this env's
PY
