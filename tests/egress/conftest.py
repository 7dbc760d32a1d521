"""Fixtures for the egress proxy tests: loopback origins, and proxies whose resolver overrides point
the test names (model.test, allowed.test, denied.test, *.wild.test ...) at them."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass

import pytest
from egress_servers import Origin

from agentbox.egress import EgressPolicy, EgressProxy, Endpoint, Limits

NAMES = (
    "model.test",
    "allowed.test",
    "denied.test",
    "echo.test",
    "wild.test",
    "a.wild.test",
    "a.b.wild.test",
    "badwild.test",
    "tls.test",
    "closed.test",
)


@pytest.fixture
def short_dir():
    """A folder with a short path: a unix socket path must fit in 108 bytes."""
    path = tempfile.mkdtemp(prefix="egress-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def origins():
    made = []

    def make(mode: str = "http", tls=None, name: str = "origin") -> Origin:
        made.append(Origin(mode, tls, name))
        return made[-1]

    yield make
    for origin in made:
        origin.close()


@dataclass
class World:
    model: Origin
    allowed: Origin
    denied: Origin
    echo: Origin
    wild: Origin
    policy: EgressPolicy


@pytest.fixture
def world(origins) -> World:
    model, allowed, denied = origins(name="model"), origins(name="allowed"), origins(name="denied")
    echo, wild = origins("echo", name="echo"), origins(name="wild")
    policy = EgressPolicy(
        model_endpoint=Endpoint(host="model.test", port=model.port),
        allow_domains=(f"allowed.test:{allowed.port}", f"echo.test:{echo.port}", f"*.wild.test:{wild.port}"),
        resolver_overrides={name: "127.0.0.1" for name in NAMES},
    )
    return World(model, allowed, denied, echo, wild, policy)


@pytest.fixture
def start_proxy(short_dir):
    """start(policy, limits=None) -> a running EgressProxy on a unix socket and a TCP port; stopped after."""
    running = []

    def start(policy: EgressPolicy, limits: Limits | None = None) -> EgressProxy:
        n = len(running)
        proxy = EgressProxy(
            policy,
            f"{short_dir}/decisions{n}.jsonl",
            socket_path=f"{short_dir}/egress{n}.sock",
            tcp_port=0,
            limits=limits,
        )
        running.append(proxy.start())
        return proxy

    yield start
    for proxy in running:
        proxy.stop()


@pytest.fixture
def proxy(world, start_proxy) -> EgressProxy:
    return start_proxy(world.policy)
