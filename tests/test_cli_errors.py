"""Every command, given bad input, prints one line and exits 2: never a traceback.

Run through the console script, as a user would, from a scratch folder (issue 28). The
library raises typed exceptions (``EnvNotFound``, ``EnvKwargsError``, ``HubError``,
``ManifestError``, ...); the CLI turns each into ``openenv COMMAND: what is wrong``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPENENV = Path(sys.executable).with_name("openenv")

#: (argv, the start of the one line on stderr). Paths are relative to the repository.
CASES = [
    (["serve", "ehco_env"], "openenv serve: no environment 'ehco_env': did you mean 'echo'?"),
    (["serve", "ROOT/envs/echo_env", "--env-kwargs", '{"size": 3}'],
     "openenv serve: --env-kwargs: EchoEnv takes no argument 'size'; it takes no arguments"),
    (["serve", "ROOT/envs/arith_env", "--env-kwargs", '{"digit": 2}'],
     "openenv serve: --env-kwargs: ArithEnv takes no argument 'digit' (did you mean 'digits'?); it takes"),
    (["serve", "ROOT/envs/arith_env", "--env-kwargs", '{"digits": 9}'],
     "openenv serve: --env-kwargs: ArithEnv digits: Input should be less than or equal to 6"),
    (["serve", "echo", "--env-kwargs", "{bad"], "openenv serve: --env-kwargs is not valid JSON:"),
    (["serve", "echo", "--env-kwargs", "[1]"], "openenv serve: --env-kwargs must be a JSON object"),
    (["serve", "echo", "--port", "99999"], "openenv serve: --port 99999 is not a port"),
    (["serve", "echo", "--workers", "0"], "openenv serve: workers must be at least 1"),
    (["serve", "echo", "--session-limits", "memory=lots"], "openenv serve: --session-limits:"),
    (["serve", "nope_mod_h6:Env"], "openenv serve: no module named 'nope_mod_h6'"),
    (["mcp", "ehco_env"], "openenv mcp: no environment 'ehco_env': did you mean 'echo'?"),
    (["mcp", "echo", "--reset-options", "{bad"], "openenv mcp: --reset-options is not JSON:"),
    (["mcp", "echo", "--reset-options", "[1]"], "openenv mcp: --reset-options must be a JSON object"),
    (["run", "openenv-echo", "-e", "NOEQUALS"], "openenv run: -e 'NOEQUALS' is not KEY=VALUE"),
    (["pull", "alice/maze\n"], "openenv pull: 'alice/maze\\n' is not a Hub repo id: use ORG/NAME"),
    (["pull", "no-slash"], "openenv pull: 'no-slash' is not a Hub repo id: use ORG/NAME"),
    (["push", "ROOT/envs/echo_env", "--repo-id", "a/../b", "--dry-run"],
     "openenv push: 'a/../b' is not a Hub repo id"),
    (["push", "no_such_folder_h6", "--repo-id", "alice/maze", "--dry-run"],
     "openenv push: no_such_folder_h6/openenv.yaml does not exist"),
    (["init", "1bad"], "openenv init: '1bad' is not usable as an env name"),
    (["validate", "ROOT/envs/echo_env", "--action", "[1]"],
     "openenv validate: --action '[1]' is not a JSON object"),
    (["k8s", "openenv-echo", "--replicas", "0"], "openenv k8s: --replicas must be at least 1"),
    (["validate", "ehco_env"], "openenv validate: no environment 'ehco_env': did you mean 'echo'?"),
    (["validate", "no_such_folder_h6/"], "openenv validate: no environment 'no_such_folder_h6/'"),
    (["build", "no_such_folder_h6"], "openenv build: no env folder 'no_such_folder_h6'"),
    (["train", "--steps", "3"], "openenv train: --env URL is required"),
    (["train", "--env", "http://127.0.0.1:9", "--steps", "0"], "openenv train: steps must be at least 1"),
    (["eval", "run", "no_such_env_h6", "--policy", "null", "-o", "out"],
     "openenv eval: unknown env 'no_such_env_h6'"),
    (["eval", "run", "echo", "--policy", "nope", "-o", "out"], "openenv eval: unknown policy 'nope'"),
    (["eval", "run", "echo", "--policy", "null", "-k", "0", "-o", "out"],
     "openenv eval: k (samples per task) must be at least 1, not 0"),
    (["eval", "report", "no_such_folder_h6"], "openenv eval: no trajectories.jsonl in no_such_folder_h6"),
    (["policy", "serve", "no_such_ckpt_h6"], "openenv policy: no checkpoint at 'no_such_ckpt_h6'"),
    (["policy", "serve", "tiny", "--port", "99999"], "openenv policy: --port 99999 is not a port"),
    (["capture", "serve", "--llm-url", "notaurl"], "openenv capture: not an http(s) URL: 'notaurl'"),
    (["capture", "serve", "--llm-url", "http://127.0.0.1:9/v1", "--port", "99999"],
     "openenv capture: --port 99999 is not a port"),
    (["catalog", "inspect", "--catalog", "no_such_h6.json", "x"],
     "openenv catalog inspect: Cannot read the configured catalog 'no_such_h6.json'"),
    (["discover", "--catalog", "no_such_h6.json"], "openenv discover: Cannot read the configured catalog"),
]


def _argv(argv: list[str]) -> list[str]:
    return [arg.replace("ROOT/", f"{ROOT}/") for arg in argv]


def _run(argv: list[str], folder: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_") and k != "PYTHONPATH"}
    folder.mkdir()
    proc = subprocess.run([str(OPENENV), *_argv(argv)], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stderr.replace(str(ROOT) + "/", "").replace(f"{folder}/", ""), proc.stdout


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, str, str]]:
    """Every case run once, four at a time (each is a fresh interpreter: ~1 s)."""
    from concurrent.futures import ThreadPoolExecutor

    base = tmp_path_factory.mktemp("cli")
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda i: _run(CASES[i][0], base / str(i)), range(len(CASES))))


@pytest.mark.parametrize("case", range(len(CASES)), ids=[" ".join(argv)[:60] for argv, _ in CASES])
def test_bad_input_is_one_line_and_exit_2(case: int, outcomes: list[tuple[int, str, str]]) -> None:
    line = CASES[case][1]
    code, err, out = outcomes[case]
    assert "Traceback" not in err, err
    assert err.startswith(line), err
    assert len(err.strip().splitlines()) == 1, err
    assert code == 2, err
    assert out == ""


def test_a_missing_checkpoint_is_named_even_when_the_port_is_taken(tmp_path: Path) -> None:
    """The checkpoint is checked before the port: with 8001 held by another server (two
    suites on one host did that), the line still names the missing checkpoint."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code, err, _ = _run(["policy", "serve", "no_such_ckpt_h6", "--port", str(port)], tmp_path / "run")
    assert err.startswith("openenv policy: no checkpoint at 'no_such_ckpt_h6'"), err
    assert code == 2


def test_the_python_api_raises_typed_errors_before_it_listens() -> None:
    """``serve()`` itself checks the constructor arguments: ``EnvKwargsError`` (also a
    ``ServeFailed`` and a ``ValueError``), before any port is bound."""
    from arith_env.env import ArithEnv

    from openenv import Action, Environment, Observation, State
    from openenv._exceptions import EnvKwargsError, ServeFailed
    from openenv.server import ServerSettings, serve

    class NeedsSize(Environment[Action, Observation, State]):
        def __init__(self, size: int, *, label: str = "") -> None:
            self.size = size

        def reset(self, *, seed=None, episode_id=None, options=None):  # type: ignore[no-untyped-def]
            return Observation()

        def step(self, action):  # type: ignore[no-untyped-def]
            return Observation()

        def state(self):  # type: ignore[no-untyped-def]
            return State()

    cases = [
        (ArithEnv, {"digit": 2}, "ArithEnv takes no argument 'digit' (did you mean 'digits'?)"),
        (ArithEnv, {"ops": "/"}, "ArithEnv ops: String should match pattern"),
        (NeedsSize, {}, "NeedsSize needs 'size'"),
        (NeedsSize, {"size": 1, "lable": "x"}, "NeedsSize takes no argument 'lable' (did you mean 'label'?)"),
    ]
    for env_class, kwargs, message in cases:
        with pytest.raises(EnvKwargsError) as info:
            serve(env_class, ServerSettings.from_env(port=0, env_kwargs=kwargs))
        assert message in str(info.value)
        assert isinstance(info.value, ServeFailed)
        assert isinstance(info.value, ValueError)


def test_run_of_an_image_that_is_not_here_says_so_first_with_the_close_names(tmp_path: Path) -> None:
    """`openenv run -d openenv-ecoh` said only that the registry could not be reached."""
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=5)
        listed = client.api.images()  # one call: images.list() inspects each, racing removals
        named = [t for image in listed for t in image.get("RepoTags") or () if t != "<none>:<none>"]
        tags = {t.split(":")[0] for t in named}
        client.close()
    except Exception as exc:
        pytest.skip(f"needs a Docker engine to list its images: {type(exc).__name__}")
    if not tags:
        pytest.skip("needs at least one image in the engine to be the close name")
    near = sorted(tags)[0]
    typo = near[:-1] + ("x" if near[-1] != "x" else "y")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_") and k != "PYTHONPATH"}
    proc = subprocess.run([str(OPENENV), "run", "-d", typo], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"openenv run: no image {typo!r} here (did you mean "), proc.stderr
    assert near in proc.stderr
    assert "could not be pulled" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
