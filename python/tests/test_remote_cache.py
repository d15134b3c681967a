"""The Redis remote cache tier from Python: ``Runtime(remote_cache=...)`` reaches the C ABI's
options (over METRALE_REMOTE_CACHE): a malformed URL raises ConfigError naming the option or the
variable, the value and the rule; a well-formed one that nothing answers opens (Redis down never
fails a call); ``""`` turns the variable off. (What the tier fetches and publishes is
tests/unit/remote_cache_test.cpp's, against a real redis-server.)"""

from __future__ import annotations

import socket

import pytest

import metrale


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_malformed_remote_cache_is_a_config_error_naming_it():
    with pytest.raises(metrale.ConfigError, match=r"remote_cache='redis://cache'.*redis://HOST:PORT\[/DB\]"):
        metrale.Runtime("host", remote_cache="redis://cache")
    with pytest.raises(metrale.ArgumentError, match="remote_cache=6379"):
        metrale.Runtime("host", remote_cache=6379)


def test_the_variable_is_read_and_the_option_wins(monkeypatch):
    monkeypatch.setenv("METRALE_REMOTE_CACHE", "http://cache:6379")
    with pytest.raises(metrale.ConfigError, match="METRALE_REMOTE_CACHE='http://cache:6379'"):
        metrale.Runtime("host")
    with metrale.Runtime("host", remote_cache=""):  # none, over the variable
        pass


def test_an_unreachable_redis_never_fails_the_open():
    with metrale.Runtime("host", remote_cache=f"redis://127.0.0.1:{_closed_port()}/2") as rt:
        assert not rt.closed
