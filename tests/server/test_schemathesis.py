"""Stock schemathesis, every check and its stateful phase, against the echo env.

The ``schemathesis run`` command line as a user would run it, untouched: all checks
(``--checks all``: no 5xx, documented statuses, bodies and headers, schema-valid
requests accepted and invalid ones refused, ``use_after_free``, ...) in the coverage,
fuzzing and stateful phases (the stateful phase follows the OpenAPI links from
``POST /sessions`` through reset, step, state and close). Bounded in examples per
operation and in time; a real server on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("schemathesis", reason="schemathesis comes with the 'dev' extra")
echo_env = pytest.importorskip("echo_env", reason="envs/echo_env is installed by scripts/test.sh")

CLI = Path(sys.executable).with_name("schemathesis")
EXAMPLES = 25


@pytest.mark.timeout(300)
@pytest.mark.parametrize("token", [None, "fuzz-token"], ids=["open", "with-token"])
def test_stock_schemathesis_all_checks_and_stateful_pass_on_the_echo_env(serve, tmp_path, token):
    server = serve(echo_env.EchoEnv, max_sessions=4096, auth_token=token or "")
    command = [
        str(CLI), "run", f"{server.url}/openapi.json", "--checks", "all",
        "--phases", "examples,coverage,fuzzing,stateful", "--max-examples", str(EXAMPLES),
        "--request-timeout", "15", "--workers", "1", "--no-color", "--generation-database", "none",
    ]
    if token:
        command += ["--header", f"Authorization: Bearer {token}"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    report = done.stdout[-15000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert "✅ Stateful" in done.stdout, report  # the stateful phase ran, and passed
    assert "✅ Fuzzing" in done.stdout, report
