"""``ServerSettings``: defaults, ``OPENENV_*`` variables, overrides, validation."""

from __future__ import annotations

import dataclasses

import pytest

from openenv.server import ServerSettings

DEFAULTS = {
    "host": "127.0.0.1",
    "port": 8000,
    "workers": 1,
    "max_sessions": 1024,
    "max_sessions_per_client": -1,
    "auth_token": "",
    "allowed_hosts": "",
    "allowed_origins": "",
    "forwarded_allow_ips": "",
    "header_timeout_s": 10.0,
    "message_timeout_s": 60.0,
    "max_connections_per_client": 2048,
    "idle_timeout_s": 600.0,
    "max_frame_bytes": 16 * 1024 * 1024,
    "ping_interval_s": 20.0,
    "ping_timeout_s": 20.0,
    "slow_call_s": 0.002,
    "thread_workers": 32,
    "call_timeout_s": 300.0,
    "max_call_timeout_s": 3600.0,
    "interrupt_grace_s": 1.0,
    "env_kwargs": {},
    "web": True,
    "log_level": "warning",
}


def test_defaults():
    assert dataclasses.asdict(ServerSettings()) == DEFAULTS


def test_from_env_without_variables_is_the_defaults():
    assert ServerSettings.from_env({}) == ServerSettings()


def test_from_env_reads_and_converts_each_variable():
    env = {
        "OPENENV_HOST": "0.0.0.0",
        "OPENENV_PORT": "9001",
        "OPENENV_WORKERS": "3",
        "OPENENV_MAX_SESSIONS": "5",
        "OPENENV_MAX_SESSIONS_PER_CLIENT": "2",
        "OPENENV_AUTH_TOKEN": "s3cret",
        "OPENENV_ALLOWED_HOSTS": "env.example",
        "OPENENV_ALLOWED_ORIGINS": "http://localhost:3000",
        "OPENENV_FORWARDED_ALLOW_IPS": "10.0.0.1",
        "OPENENV_IDLE_TIMEOUT_S": "1.5",
        "OPENENV_MAX_FRAME_BYTES": "4096",
        "OPENENV_PING_INTERVAL_S": "0",
        "OPENENV_PING_TIMEOUT_S": "2.5",
        "OPENENV_SLOW_CALL_S": "0.01",
        "OPENENV_THREAD_WORKERS": "4",
        "OPENENV_LOG_LEVEL": "debug",
        "OPENENV_CALL_TIMEOUT_S": "30",
        "OPENENV_MAX_CALL_TIMEOUT_S": "60",
        "OPENENV_INTERRUPT_GRACE_S": "0.5",
        "OPENENV_ENV_KWARGS": '{"size": 3, "name": "x"}',
        "OPENENV_WEB": "false",
        "UNRELATED": "x",
    }
    s = ServerSettings.from_env(env)
    assert dataclasses.asdict(s) == {
        "host": "0.0.0.0", "port": 9001, "workers": 3, "max_sessions": 5, "idle_timeout_s": 1.5,
        "max_sessions_per_client": 2, "auth_token": "s3cret", "allowed_hosts": "env.example",
        "allowed_origins": "http://localhost:3000", "forwarded_allow_ips": "10.0.0.1",
        "header_timeout_s": 10.0, "message_timeout_s": 60.0, "max_connections_per_client": 2048,
        "max_frame_bytes": 4096, "ping_interval_s": 0.0, "ping_timeout_s": 2.5, "slow_call_s": 0.01,
        "thread_workers": 4, "log_level": "debug", "call_timeout_s": 30.0, "max_call_timeout_s": 60.0,
        "interrupt_grace_s": 0.5, "env_kwargs": {"size": 3, "name": "x"}, "web": False,
    }
    assert isinstance(s.port, int)
    assert isinstance(s.idle_timeout_s, float)


def test_the_auth_token_is_not_in_the_settings_repr():
    assert "s3cret" not in repr(ServerSettings(auth_token="s3cret"))


def test_from_env_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("OPENENV_MAX_SESSIONS", "17")
    assert ServerSettings.from_env().max_sessions == 17


def test_overrides_win_and_none_is_ignored():
    s = ServerSettings.from_env({"OPENENV_PORT": "9001", "OPENENV_WORKERS": "2"}, port=7000, workers=None)
    assert (s.port, s.workers) == (7000, 2)


@pytest.mark.parametrize(("var", "raw"), [("OPENENV_PORT", "eighty"), ("OPENENV_IDLE_TIMEOUT_S", "soon")])
def test_bad_variable_names_itself(var, raw):
    with pytest.raises(ValueError, match=var):
        ServerSettings.from_env({var: raw})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("max_sessions", 0, "max_sessions"), ("workers", 0, "workers"), ("max_frame_bytes", 1023, "1024"),
     ("max_sessions_per_client", -2, "max_sessions_per_client")],
)
def test_validation(field, value, message):
    with pytest.raises(ValueError, match=message):
        ServerSettings(**{field: value}).validated()
    with pytest.raises(ValueError, match=message):
        ServerSettings.from_env({}, **{field: value})


@pytest.mark.parametrize(("raw", "value"), [("false", False), ("0", False), ("no", False), ("off", False),
                                            ("true", True), ("1", True), ("Yes", True), ("on", True)])
def test_bool_settings_read_false_as_false(raw, value):
    assert ServerSettings.from_env({"OPENENV_WEB": raw}).web is value


@pytest.mark.parametrize(("var", "raw", "message"), [
    ("OPENENV_WEB", "maybe", "not a boolean"),
    ("OPENENV_ENV_KWARGS", "{bad", "not valid JSON"),
    ("OPENENV_ENV_KWARGS", "[1]", "must be a JSON object"),
])
def test_bad_typed_variables_say_why(var, raw, message):
    with pytest.raises(ValueError, match=message):
        ServerSettings.from_env({var: raw})


def test_to_env_round_trips():
    s = ServerSettings(host="0.0.0.0", port=1234, workers=2, idle_timeout_s=0.0, log_level="info",
                       env_kwargs={"a": [1, 2]}, web=False)
    env = s.to_env()
    assert set(env) == {f"OPENENV_{k.upper()}" for k in DEFAULTS}
    assert all(isinstance(v, str) for v in env.values())
    assert ServerSettings.from_env(env) == s


@pytest.mark.parametrize(("max_sessions", "per_client", "quota"), [
    (1024, -1, 768), (64, -1, 48), (8, -1, 6), (4, -1, 3), (3, -1, 3), (1, -1, 1), (8, 0, 0), (8, 8, 8),
    (8, 3, 3)])
def test_the_default_client_quota_keeps_a_quarter_for_others(max_sessions, per_client, quota):
    settings = ServerSettings(max_sessions=max_sessions, max_sessions_per_client=per_client).validated()
    assert settings.client_quota == quota
