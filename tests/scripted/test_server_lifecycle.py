"""A real server on 127.0.0.1: listening when start() returns, gone when stop() returns."""

from __future__ import annotations

import http.client
import socket
import threading

import pytest

from agentbox.scripted import ScriptedModel


def test_the_socket_accepts_connections_as_soon_as_start_returns():
    model = ScriptedModel().start()
    try:
        assert model.base_url == f"http://127.0.0.1:{model.port}" and model.port > 0
        socket.create_connection(("127.0.0.1", model.port), timeout=5).close()
    finally:
        model.stop()


def test_stop_releases_the_port_and_its_thread():
    with ScriptedModel() as model:
        port, thread = model.port, model._thread
    assert not thread.is_alive()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    with pytest.raises(RuntimeError, match="not started"):
        model.port


def test_stop_does_not_wait_for_an_idle_keep_alive_connection():
    before = set(threading.enumerate())
    with ScriptedModel() as model:
        connection = http.client.HTTPConnection("127.0.0.1", model.port, timeout=5)
        connection.request("GET", "/v1/models")
        assert connection.getresponse().read()
    leftovers = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for thread in leftovers:
        thread.join(timeout=5)  # handler threads end once their socket is shut; a bounded join, not a sleep
    assert not [t for t in leftovers if t.is_alive()]
    connection.close()


def test_two_models_listen_on_different_ports():
    with ScriptedModel() as one, ScriptedModel() as two:
        assert one.port != two.port
