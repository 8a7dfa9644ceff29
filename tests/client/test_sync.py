"""``EnvClient`` (blocking) against a real server over real sockets."""

from __future__ import annotations

import threading
import time

import pytest

from openenv import (
    GENERIC_MODELS,
    BatchError,
    ConnectError,
    ConnectionClosed,
    DeadlineExceeded,
    EnvClient,
    ExecutionError,
    FrameTooLarge,
    OpenEnvError,
    RequestTimeout,
    ResetRequired,
    SessionBusy,
    SessionClosed,
    StepResult,
    TransportError,
    ValidationFailed,
)
from openenv._env import Execution

from .._envs import MODELS, TAction, TObservation, TState, make_env
from ..conftest import free_port, socket_closed, wait_until


def test_typed_episode(server):
    with EnvClient(server.url, MODELS) as env:
        assert env.extended is True
        first = env.reset(seed=4, episode_id="ep-1", level="hard")
        step = env.step(TAction(message="hello"))
        state = env.state()
    assert isinstance(first, StepResult)
    assert isinstance(first.observation, TObservation)
    assert (first.observation.seed, first.observation.episode_id) == (4, "ep-1")
    assert first.observation.options == {"level": "hard"}
    assert first.reward is None
    assert step.observation.message == "hello"
    assert step.reward == 1.0
    assert step.observation.reward == 1.0
    assert (step.terminated, step.truncated, step.done) == (False, False, False)
    assert isinstance(state, TState)
    assert (state.episode_id, state.step_count) == ("ep-1", 1)


def test_terminated_and_truncated(server):
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        ended = env.step(TAction(done=True))
        with pytest.raises(ResetRequired, match="episode is over"):
            env.step(TAction())  # after the end: refused, nothing applied
        env.reset()
        cut = env.step(TAction(truncated=True))
    assert (ended.terminated, ended.truncated, ended.done) == (True, False, True)
    assert (cut.terminated, cut.truncated, cut.done) == (False, True, True)
    assert cut.observation.truncated is True


def test_generic_client_gets_dicts(server):
    with EnvClient(server.url, GENERIC_MODELS) as env:
        env.reset()
        result = env.step({"message": "x"})
        state = env.state()
    assert isinstance(result.observation, dict)
    assert result.observation["message"] == "x"
    assert "reward" not in result.observation
    assert result.reward == 1.0
    assert state["step_count"] == 1


def test_without_extensions_it_speaks_upstream(server):
    with EnvClient(server.url, MODELS, extensions=False) as env:
        assert env.extended is False
        server.wait_active(1)  # plain connection: session built at connect
        env.reset()
        assert env.step(TAction(truncated=True)).done is True
        with pytest.raises(OpenEnvError, match=r"openenv\.v1"):
            env.reset(session="a")
        with pytest.raises(OpenEnvError, match=r"openenv\.v1"):
            env.step_batch({"a": TAction()})


def test_named_sessions_and_close_session(server):
    with EnvClient(server.url, MODELS) as env:
        a = env.reset(session="a").observation.instance
        b = env.reset(session="b").observation.instance
        env.step(TAction(), session="a")
        assert env.state(session="a").step_count == 1
        assert env.state(session="b").step_count == 0
        env.close_session("a")
        server.wait_active(1)
        with pytest.raises(ResetRequired):
            env.step(TAction(), session="a")
        assert env.step(TAction(), session="b").observation.instance == b
    assert a != b


def test_reset_batch_and_step_batch(server):
    keys = [f"k{i}" for i in range(5)]
    with EnvClient(server.url, MODELS) as env:
        resets = env.reset_batch(keys, seed=10, level=1)
        steps = env.step_batch({k: TAction(message=k) for k in reversed(keys)})
    assert [r.observation.seed for r in resets] == [10, 11, 12, 13, 14]
    assert all(r.observation.options == {"level": 1} for r in resets)
    assert [s.observation.message for s in steps] == list(reversed(keys))
    assert len({s.observation.instance for s in steps}) == 5


def test_step_batch_errors_per_item(server):
    with EnvClient(server.url, MODELS) as env:
        env.reset_batch(["a", "b", "c"])
        actions = {"a": TAction(message="ok"), "b": TAction(fail="nope"), "c": TAction(message="ok")}
        out = env.step_batch(actions, return_exceptions=True)
        assert isinstance(out[0], StepResult)
        assert isinstance(out[1], ExecutionError)
        assert out[1].details["exception"] == "RuntimeError"
        assert out[2].observation.step == 1
        with pytest.raises(BatchError, match="1 of 3 batch items failed") as info:
            env.step_batch(actions)
        # every outcome is kept: the other two steps were applied
        ok_a, err_b, ok_c = info.value.results
        assert (ok_a.observation.step, ok_c.observation.step) == (2, 2)
        assert isinstance(err_b, ExecutionError)
        assert info.value.errors == [err_b]
        never = env.step_batch({"zz": TAction()}, return_exceptions=True)
        assert isinstance(never[0], ResetRequired)


def test_server_errors_raise_typed_exceptions(server):
    with EnvClient(server.url, MODELS) as env:
        with pytest.raises(ResetRequired):
            env.step(TAction())
        env.reset()
        with pytest.raises(ValidationFailed) as info:
            env.step({"message": 5})
        assert info.value.details["errors"][0]["loc"] == ["message"]  # relative to the action, as upstream
        with pytest.raises(ExecutionError, match="kaboom"):
            env.step(TAction(fail="kaboom"))
        assert env.step(TAction()).observation.step == 1  # still usable


@pytest.mark.parametrize("binary", [False, True])
def test_bytes_fields_round_trip(server, binary):
    with EnvClient(server.url, MODELS, binary=binary) as env:
        env.reset()
        result = env.step(TAction(blob_size=1000))
        state = env.state()
    assert result.observation.blob == bytes(i % 256 for i in range(1000))
    assert state.step_count == 1


def test_binary_batch(server):
    with EnvClient(server.url, MODELS, binary=True) as env:
        env.reset_batch(["a", "b"])
        out = env.step_batch({"a": TAction(blob_size=3), "b": TAction(blob_size=2)})
    assert [r.observation.blob for r in out] == [b"\x00\x01\x02", b"\x00\x01"]


def test_client_timeout_is_the_server_deadline(serve):
    gate = threading.Event()
    server = serve(make_env(step_gate=gate))
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        try:  # the server answers at its deadline, while the step is still held
            with pytest.raises(DeadlineExceeded, match=r"overran its deadline of 0\.2 s") as info:
                env.step(TAction(message="hold"), timeout_s=0.2)
        finally:
            gate.set()
        # A threaded env without interrupt() cannot be stopped: its session was closed.
        assert info.value.details["session_closed"] is True
        assert info.value.details["applied"] == "unknown"
        with pytest.raises(SessionClosed, match="overran its deadline"):
            env.step(TAction(message="next"))
        assert env.reset().observation.step == 0  # a fresh session on the same connection
    server.wait_closes([1, 1], timeout_s=30)  # the stuck env closed once its call returned


@pytest.mark.socket_only
def test_timeout_on_extended_connection_does_not_desync(serve):
    server = serve(make_env(execution=Execution.INLINE))  # a blocked loop: no deadline
    with EnvClient(server.url, MODELS) as env:
        env.reply_margin_s = 0.0
        env.reset()
        with pytest.raises(RequestTimeout, match="may have been applied") as info:
            env.step(TAction(message="slow", sleep_s=1.2), timeout_s=0.2)  # 1 s of margin
        assert info.value.details == {"timeout_s": 0.2, "applied": "unknown"}
        # the late reply to "slow" arrives first and must be dropped
        after = env.step(TAction(message="next"), timeout_s=10)
        assert after.observation.message == "next"
        assert after.observation.step == 2
        assert env.state().step_count == 2


def test_a_request_behind_a_running_call_is_refused_at_once(serve):
    gate = threading.Event()
    server = serve(make_env(step_gate=gate))
    with EnvClient(server.url, MODELS) as env:
        env.reply_margin_s = -29.9  # the client gives up after 0.1 s; the server's deadline is 30 s
        env.reset()
        try:  # the retry is refused while the first step is still held
            with pytest.raises(RequestTimeout):
                env.step(TAction(message="hold"), timeout_s=30.0)
            env.reply_margin_s = type(env).reply_margin_s
            with pytest.raises(SessionBusy, match="refused and not applied") as info:
                env.step(TAction(message="retry"), timeout_s=5)
            assert info.value.details["applied"] is False
        finally:
            gate.set()

        def later() -> TObservation | None:
            try:
                return env.step(TAction(message="later")).observation
            except SessionBusy:  # the held step has not ended on the server yet
                return None

        assert wait_until(later, timeout_s=30, what="the held step to end").step == 2


def test_timeout_without_extensions_drops_the_socket(server):
    env = EnvClient(server.url, MODELS, extensions=False)
    env.reset()
    with pytest.raises(RequestTimeout):
        env.step(TAction(sleep_s=1.0), timeout_s=0.2)
    with pytest.raises(SessionClosed, match="create a new one"):
        env.step(TAction())
    server.wait_active(0)
    server.wait_closes([1])
    env.close()


@pytest.mark.socket_only
def test_frame_too_large(serve):
    server = serve(max_frame_bytes=2048)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        with pytest.raises(FrameTooLarge, match=r"limit of 2048 bytes.*OPENENV_MAX_FRAME_BYTES") as info:
            env.step(TAction(message="x" * 10_000))
        assert info.value.details["limit"] == 2048
        with pytest.raises(SessionClosed):
            env.step(TAction())
    server.wait_active(0)


@pytest.mark.socket_only
def test_reply_over_the_client_limit_is_a_transport_error(server):
    with EnvClient(server.url, MODELS, max_frame_bytes=2000) as env:
        env.reset()
        with pytest.raises(TransportError, match=r"over this client's limit.*max_frame_bytes"):
            env.step(TAction(blob_size=5000))
    server.wait_active(0)


def test_idle_reap_surfaces_as_connection_closed_4408(serve):
    server = serve(idle_timeout_s=0.3)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        server.wait_closes([1])  # the reaper closes the env first, then the socket
        wait_until(lambda: socket_closed(server), timeout_s=30, what="the server to close the socket")
        with pytest.raises(ConnectionClosed) as info:
            env.step(TAction())
        assert info.value.code == 4408
        assert "idle" in info.value.reason


@pytest.mark.socket_only
def test_server_dropping_an_idle_client_is_connection_closed(serve):
    # Regression: this used to escape as a raw BrokenPipeError from the pong flush.
    server = serve(ping_interval_s=0.2, ping_timeout_s=0.2)
    env = EnvClient(server.url, MODELS)
    env.reset()
    server.wait_active(0, timeout_s=5)
    with pytest.raises(ConnectionClosed) as info:
        env.step(TAction())
    assert info.value.code == 1011
    env.close()


def test_connect_error_when_nothing_listens():
    env = EnvClient(f"http://127.0.0.1:{free_port()}", MODELS, connect_timeout_s=2)
    with pytest.raises(ConnectError):
        env.reset()


def test_connect_error_on_a_non_websocket_path(server):
    with pytest.raises(ConnectError):
        EnvClient(f"{server.url}/nope", MODELS).connect()


def test_close_is_idempotent_and_later_use_is_a_clear_error(server):
    env = EnvClient(server.url, MODELS)
    env.reset()
    calls: list[str] = []
    env.on_close(lambda: calls.append("closed"))
    env.close()
    env.close()
    assert calls == ["closed"]
    with pytest.raises(SessionClosed, match="create a new one"):
        env.step(TAction())
    with pytest.raises(SessionClosed):
        env.connect()
    server.wait_active(0)
    server.wait_closes([1])


def test_close_before_connect_is_fine(server):
    env = EnvClient(server.url, MODELS)
    env.close()
    assert server.active == 0


def test_ws_base_url_is_accepted(server):
    with EnvClient(f"ws://127.0.0.1:{server.port}/", MODELS) as env:
        assert env.reset().observation.message == "ready"


def test_sync_client_starts_no_threads(serve):
    server = serve(make_env(execution=Execution.INLINE))
    before = {t.ident for t in threading.enumerate()}
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        env.step(TAction())
        time.sleep(0.05)
        new = [t for t in threading.enumerate()
               if t.ident not in before and not t.name.startswith("openenv-")]
    assert new == []


def test_mixed_batch_of_resets_steps_states_and_closes(server):
    from openenv.client import Close, GetState, Reset, Step

    with EnvClient(server.url, MODELS) as env:
        env.reset_batch(["a", "b"])
        out = env.batch([Reset("c", seed=5, options={"level": 2}), Step("a", TAction(message="x")),
                         GetState("b"), Close("b")])
        assert out[0].observation.seed == 5
        assert out[0].observation.options == {"level": 2}
        assert out[1].observation.message == "x"
        assert isinstance(out[2], TState)
        assert out[3] is None
        with pytest.raises(BatchError) as info:
            env.batch([Step("a", TAction()), GetState("b")])
        assert isinstance(info.value.results[1], ResetRequired)  # "b" was closed
