"""openenv.sandbox on real processes, at each level this machine supports."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from openenv._exceptions import SandboxError, SandboxUnavailable
from openenv.sandbox import HeadTail, Isolation, Sandbox, SandboxConfig, SandboxLevel, parse_level
from openenv.sandbox._bwrap import bwrap_works
from openenv.sandbox._procs import pids_of_uid, pids_with_marker

ROOT = os.geteuid() == 0
BWRAP_WHY = bwrap_works(190_000 + 4096 if ROOT else None)
LEVELS = ["none"] + ([] if BWRAP_WHY else ["strict"])


@pytest.fixture(params=LEVELS)
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(level=request.param)) as sandbox:
        yield sandbox


def sh(box: Sandbox, script: str, timeout_s: float = 10, **kw: object) -> tuple[int | None, str, str]:
    done = box.run(["sh", "-c", script], timeout_s=timeout_s, **kw)
    return done.exit_code, done.stdout.decode(), done.stderr.decode()


def test_parse_level() -> None:
    assert parse_level(" Strict ") is SandboxLevel.STRICT
    assert SandboxConfig(level="none").level is SandboxLevel.NONE  # type: ignore[arg-type]
    with pytest.raises(SandboxError, match="strict, auto, none"):
        parse_level("tight")
    with pytest.raises(SandboxError, match="absolute"):
        SandboxConfig(ro_paths=("relative",))


def test_from_env_reads_the_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_SANDBOX", "none")
    assert SandboxConfig.from_env().level is SandboxLevel.NONE
    assert SandboxConfig.from_env(network=True).network is True


def test_from_env_reads_the_uid_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server in a container (the coding image) leases uids apart from the host's."""
    assert SandboxConfig.from_env().uid_base == 190_000
    monkeypatch.setenv("OPENENV_SANDBOX_UID_BASE", "390000")
    assert SandboxConfig.from_env().uid_base == 390_000
    for bad in ("many", "12"):
        monkeypatch.setenv("OPENENV_SANDBOX_UID_BASE", bad)
        with pytest.raises(SandboxError, match="OPENENV_SANDBOX_UID_BASE must be"):
            SandboxConfig.from_env()


@pytest.mark.skipif(BWRAP_WHY != "", reason=f"bubblewrap does not work here: {BWRAP_WHY}")
def test_auto_uses_bubblewrap_where_it_works() -> None:
    with Sandbox(SandboxConfig(level="auto")) as sandbox:  # type: ignore[arg-type]
        assert sandbox.isolation is Isolation.BWRAP
        assert sandbox.describe()["level"] == "bwrap"
        assert sandbox.describe()["network"] is False


def test_strict_refuses_without_bubblewrap(tmp_path: object) -> None:
    code = (
        "from openenv.sandbox import Sandbox, SandboxConfig\n"
        "from openenv._exceptions import SandboxUnavailable\n"
        "try:\n    Sandbox(SandboxConfig(level='strict'))\n"
        "except SandboxUnavailable as exc:\n    print('refused:', exc)\n"
    )
    env = {**os.environ, "PATH": "/nonexistent"}  # no bwrap on PATH
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    refusal = "refused: sandbox level 'strict' needs bubblewrap: bwrap is not installed"
    assert refusal in out.stdout, out.stderr
    assert SandboxUnavailable.__mro__[1] is SandboxError


def test_runs_in_a_private_workdir_with_a_clean_env(box: Sandbox) -> None:
    code, out, _ = sh(box, 'pwd; echo "$HOME"; echo "${SECRET:-unset}"; echo hi > f.txt')
    assert code == 0
    pwd, home, secret = out.split()
    assert pwd == home == box.inner_workdir
    assert secret == "unset"
    assert (box.workdir / "f.txt").read_text() == "hi\n"


def test_root_server_runs_sandboxes_as_their_own_unprivileged_uid(box: Sandbox) -> None:
    if not ROOT:
        pytest.skip("uid drop applies only to a root server")
    _, out, _ = sh(box, "id -u")
    assert int(out) == box.uid >= 190_000
    with Sandbox(SandboxConfig(level=box.config.level)) as other:
        assert other.uid != box.uid


def test_system_is_not_writable(box: Sandbox) -> None:
    code, _, err = sh(box, "echo x > /usr/evil; echo x > /etc/evil")
    assert code != 0
    assert not os.path.exists("/usr/evil")
    assert not os.path.exists("/etc/evil")
    assert "Read-only" in err or "Permission denied" in err


def test_another_sandbox_files_are_out_of_reach(box: Sandbox) -> None:
    if not ROOT and box.isolation is Isolation.RLIMITS:
        pytest.skip("rlimits without root: sandboxes share the server's uid (the container is the boundary)")
    with Sandbox(box.config) as other:
        (other.workdir / "secret.txt").write_text("s3cret")
        os.chown(other.workdir / "secret.txt", other.uid, other.uid)
        code, out, _ = sh(box, f"cat {other.workdir}/secret.txt; ls {other.root}")
        assert "s3cret" not in out
        assert code != 0


def test_timeout_kills_the_whole_group(box: Sandbox) -> None:
    start = time.monotonic()
    done = box.run(["sh", "-c", "sleep 30 & sleep 30; echo never"], timeout_s=0.5)
    assert done.timed_out
    assert done.exit_code is None
    assert time.monotonic() - start < 5
    assert b"never" not in done.stdout


def test_output_is_bounded(box: Sandbox) -> None:
    done = box.run(["sh", "-c", "yes | head -c 5000000"], timeout_s=10, output_limit=1000)
    assert done.exit_code == 0
    assert len(done.stdout) == 1000
    assert done.stdout_omitted == 5_000_000 - 1000


def test_input_reaches_stdin(box: Sandbox) -> None:
    done = box.run(["cat"], input=b"x" * 200_000, timeout_s=10)
    assert done.stdout == b"x" * 200_000


def test_memory_limit() -> None:
    config = SandboxConfig(level="none").with_limits(memory_bytes=256 << 20)  # type: ignore[arg-type]
    with Sandbox(config) as sandbox:
        done = sandbox.run(["python3", "-c", "b = bytearray(512 << 20)"], timeout_s=20)
    assert done.exit_code == 1
    assert b"MemoryError" in done.stderr


def test_cpu_and_file_size_limits() -> None:
    config = SandboxConfig(level="none").with_limits(cpu_s=1, file_size_bytes=1 << 20)  # type: ignore[arg-type]
    with Sandbox(config) as sandbox:
        # 1 s of CPU takes a loaded host's share of a core longer: 40 s of wall clock is 40x
        busy = sandbox.run(["sh", "-c", "while :; do :; done"], timeout_s=40)
        big = sandbox.run(["sh", "-c", "head -c 2000000 /dev/zero > big"], timeout_s=20)
    assert busy.exit_code is not None
    assert busy.exit_code < 0
    assert not busy.timed_out  # the CPU limit stopped it, not the 40 s wall clock
    assert big.exit_code == 128 + 25  # the shell reports its child's SIGXFSZ
    assert b"File size limit exceeded" in big.stderr
    assert (sandbox.workdir.parent).exists() is False


def test_fork_bomb_is_contained(box: Sandbox) -> None:
    if not ROOT:
        pytest.skip("nproc is per uid: only a root server gives each sandbox its own")
    bomb = box.popen(["bash", "-c", "b() { b | b & }; b; sleep 30"], stderr=subprocess.DEVNULL)
    deadline, peak = time.monotonic() + 5, 0
    while peak <= 50 and time.monotonic() < deadline:  # the bomb really runs
        peak = max(peak, len(pids_of_uid(box.uid)))
    assert peak > 50
    with Sandbox(box.config) as other:  # another session keeps working meanwhile
        assert sh(other, "echo ok")[1] == "ok\n"
    assert subprocess.run(["true"], timeout=10).returncode == 0  # and so does the server
    box.kill()
    bomb.wait(timeout=10)
    deadline = time.monotonic() + 10  # SIGKILLed, a process still shows until it has exited
    while pids_of_uid(box.uid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pids_of_uid(box.uid) == []


def test_kill_reaches_processes_that_left_the_group(box: Sandbox) -> None:
    proc = box.popen(["sh", "-c", "setsid sleep 60 & sleep 60"])
    marker = f"OPENENV_SANDBOX_ID={box.id}".encode()
    deadline = time.monotonic() + 5
    while len(_members(box, marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_members(box, marker)) >= 2
    box.kill()
    proc.wait(timeout=5)
    deadline = time.monotonic() + 5
    while _members(box, marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _members(box, marker) == []


def _members(box: Sandbox, marker: bytes) -> list[int]:
    if ROOT:
        return [pid for pid in pids_of_uid(box.uid) if _comm(pid) == "sleep"]
    return pids_with_marker(marker)


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def test_close_removes_everything_and_is_idempotent() -> None:
    sandbox = Sandbox(SandboxConfig(level="none"))  # type: ignore[arg-type]
    proc = sandbox.popen(["sleep", "60"])
    (sandbox.workdir / "sub").mkdir()
    (sandbox.workdir / "sub" / "f").write_text("x")
    os.chmod(sandbox.workdir / "sub", 0)
    sandbox.close()
    sandbox.close()
    assert proc.wait(timeout=5) == -9
    assert not sandbox.root.exists()
    with pytest.raises(SandboxError, match="closed"):
        sandbox.popen(["true"])


def test_bwrap_has_no_network_and_its_own_pids() -> None:
    if BWRAP_WHY:
        pytest.skip(f"bubblewrap does not work here: {BWRAP_WHY}")
    with Sandbox(SandboxConfig(level="strict")) as sandbox:  # type: ignore[arg-type]
        _code, out, _ = sh(
            sandbox, "tail -n +3 /proc/net/dev | cut -d: -f1; echo $$; ls /proc | grep -c '^[0-9]'"
        )
        ifaces, pid, nprocs = out.split()[:-2], int(out.split()[-2]), int(out.split()[-1])
        assert ifaces == ["lo"]
        assert pid <= 3
        assert nprocs < 10


def test_headtail_keeps_both_ends() -> None:
    buf = HeadTail(6)
    for chunk in (b"abc", b"defgh", b"ijkl"):
        buf.feed(chunk)
    assert buf.getvalue() == b"abcjkl"
    assert buf.omitted == 6
    assert buf.total == 12
    assert buf.take() == (b"abcjkl", 6)
    assert len(buf) == 0
    with pytest.raises(ValueError, match="limit"):
        HeadTail(-1)


def test_binds_show_host_paths(box: Sandbox) -> None:
    # bound host paths must be reachable by the sandbox's uid (pytest's tmp_path is not)
    data, out = box.root / "data", box.root / "out"
    data.mkdir()
    out.mkdir()
    (data / "in.txt").write_text("input")
    os.chmod(data, 0o755)
    os.chown(out, box.uid, box.uid)
    ro = box.visible_path("/data", data)
    rw = box.visible_path("/out", out)
    assert ro == ("/data" if box.isolation is Isolation.BWRAP else str(data))
    script = f"cat {ro}/in.txt; echo copy > {rw}/o.txt"
    code, text, _ = sh(box, script, ro_binds={"/data": str(data)}, binds={"/out": str(out)})
    assert code == 0
    assert text == "input"
    assert (out / "o.txt").read_text() == "copy\n"
    if box.isolation is Isolation.BWRAP:
        code, _, err = sh(box, "echo x > /data/in.txt", ro_binds={"/data": str(data)})
        assert "Read-only" in err
        assert (data / "in.txt").read_text() == "input"


def test_stale_directories_of_a_uid_are_removed_at_its_next_lease() -> None:
    if not ROOT:
        pytest.skip("stale directories are found by uid: a root server only")
    with Sandbox(SandboxConfig(level="none")) as first:  # type: ignore[arg-type]
        uid, base = first.uid, first.root.parent
    stale = base / f"u{uid}-crashed"
    stale.mkdir()
    for _ in range(50):  # lease until that uid comes round again (random start)
        with Sandbox(SandboxConfig(level="none", uid_base=uid, uid_count=1)) as again:  # type: ignore[arg-type]
            assert again.uid == uid
            break
    assert not stale.exists()


def test_no_network_at_any_level(box: Sandbox) -> None:
    probe = (
        "import socket\n"
        "socket.socket(socket.AF_UNIX).close()\n"
        "try:\n    socket.create_connection(('127.0.0.1', 9), 2)\n"
        "except OSError as exc:\n    print(type(exc).__name__)\n"
    )
    done = box.run(["python3", "-c", probe], timeout_s=20)
    assert done.exit_code == 0, done.stderr
    # bubblewrap: no route (only lo, nothing listens); rlimits: the seccomp filter
    expected = "ConnectionRefusedError" if box.isolation is Isolation.BWRAP else "PermissionError"
    assert done.stdout.decode().strip() == expected
    report = box.describe()
    assert report["network"] is False
    assert report["network_block"] == ("namespace" if box.isolation is Isolation.BWRAP else "seccomp")
    # the filter keeps the usual signals: a pipe reader that quits ends the writer quietly
    piped = box.run(["bash", "-c", "yes | head -n 2"], timeout_s=20)
    assert piped.stdout == b"y\ny\n"
    assert piped.stderr == b""


def test_without_the_filter_the_report_says_network() -> None:
    with Sandbox(SandboxConfig(level="none", seccomp=False)) as sandbox:  # type: ignore[arg-type]
        assert sandbox.describe()["network"] is True
        assert sandbox.describe()["network_block"] is None
