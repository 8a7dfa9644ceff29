"""An env's ``interrupt()`` runs off the event loop: one that blocks stalls nothing else.

The env here is stuck in a step that holds what its ``interrupt()`` needs (a lock the
step holds, a child that does not answer): the interrupt blocks as long as the step.
The overrun must still be answered after the deadline and the grace, the session
closed, other sessions and /health served meanwhile, and the env closed only once both
the step and the interrupt returned.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from openenv import Action as BaseAction
from openenv import DeadlineExceeded, EnvClient, Environment, Execution, Observation, SessionClosed, State

from .._wire import call, connect

#: How long the stuck step and its interrupt block unless the test lets them go.
STUCK_S = 20.0


class Act(BaseAction):
    stuck: bool = False


class Obs(Observation):
    pass


class LockedInterrupt(Environment[Act, Obs, State]):
    """A stuck step holds ``lock``; ``interrupt()`` needs it, so it blocks too."""

    execution = Execution.THREAD
    release = threading.Event()
    lock = threading.Lock()
    entered = threading.Event()  #: set when ``interrupt()`` starts (before it blocks)
    closes: list[float] = []
    interrupts: list[float] = []

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        return Obs()

    def step(self, action: Act) -> Obs:
        if action.stuck:
            with type(self).lock:
                type(self).release.wait(STUCK_S)
        self._state.step_count += 1
        return Obs()

    def interrupt(self) -> None:
        type(self).entered.set()
        with type(self).lock:  # blocks while the stuck step holds it
            type(self).interrupts.append(time.monotonic())

    def state(self) -> State:
        return self._state

    def close(self) -> None:
        type(self).closes.append(time.monotonic())


def test_a_blocking_interrupt_stalls_no_other_session_nor_health(serve: Any) -> None:
    env = type("LockedInterrupt", (LockedInterrupt,), {
        "release": threading.Event(), "lock": threading.Lock(), "entered": threading.Event(),
        "closes": [], "interrupts": [],
    })
    server = serve(env, max_sessions=4, interrupt_grace_s=0.3)
    outcome: dict[str, Any] = {}

    def stuck_client() -> None:
        with EnvClient(server.url) as client:
            client.reset()
            started = time.monotonic()
            try:  # its own deadline: the other session's calls keep the server's (300 s)
                client.step({"stuck": True}, timeout_s=0.3)
            except DeadlineExceeded as e:
                outcome["error"], outcome["after_s"] = e, time.monotonic() - started
            try:
                client.step({})
            except SessionClosed as e:
                outcome["then"] = e

    stuck = threading.Thread(target=stuck_client, daemon=True)
    try:
        stuck.start()
        # While the step is stuck and its interrupt blocked, /health and another session
        # are served: on the loop, the interrupt would hold both until the step let go of
        # the lock (STUCK_S), so they would be answered only after it ran.
        with httpx.Client(timeout=STUCK_S) as http, connect(server.ws_url) as ws:
            call(ws, {"type": "reset"})
            assert env.entered.wait(STUCK_S / 2), "interrupt() was never called"
            assert http.get(f"{server.url}/health").status_code == 200
            assert call(ws, {"type": "step", "data": {}})["type"] == "observation"
            assert env.lock.locked(), "answered only once the stuck step let go"
            assert env.interrupts == [], "answered only once the interrupt ran"
        stuck.join(STUCK_S / 2)
        assert "error" in outcome, "the overrun was not answered while the interrupt blocked"
        error = outcome["error"]
        assert "could not be interrupted" in str(error)
        assert error.details["session_closed"] is True
        assert outcome["after_s"] < STUCK_S / 2
        assert isinstance(outcome.get("then"), SessionClosed)
        assert env.interrupts == []  # still blocked
        until = time.monotonic() + 5
        while not env.closes and time.monotonic() < until:  # the other session's close
            time.sleep(0.05)
        time.sleep(0.3)
        assert len(env.closes) == 1  # the other session's; never under the stuck call
    finally:
        env.release.set()
        stuck.join(STUCK_S)
    deadline = time.monotonic() + 10
    while len(env.closes) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(env.interrupts) == 1  # it ran once the step let go of the lock
    assert len(env.closes) == 2
    assert env.closes[-1] >= env.interrupts[0]


@pytest.mark.parametrize("raises", [False, True])
def test_an_interrupt_that_returns_keeps_the_session(serve: Any, raises: bool) -> None:
    """The thread hop changes nothing for an interrupt that works (or raises: logged)."""

    class Stoppable(LockedInterrupt):
        closes: list[float] = []
        interrupts: list[float] = []
        release = threading.Event()

        def step(self, action: Act) -> Obs:
            if action.stuck:
                type(self).release.clear()
                type(self).release.wait(STUCK_S)
            self._state.step_count += 1
            return Obs()

        def interrupt(self) -> None:
            type(self).release.set()
            if raises:
                raise RuntimeError("interrupt failed after stopping the call")

    server = serve(Stoppable, interrupt_grace_s=2.0)
    with EnvClient(server.url) as client:
        client.reset()
        # the stuck step's own deadline: the other calls keep the server's (300 s), so a
        # loaded host cannot push them past one
        with pytest.raises(DeadlineExceeded, match="interrupted; the session is still usable") as info:
            client.step({"stuck": True}, timeout_s=0.2)
        assert info.value.details["session_closed"] is False
        assert client.state()["step_count"] == 1
        client.step({})
