"""The inner relay of a run: copied into the run's relay folder, then started as the sandbox's first process.

It maps loopback ports inside the network namespace to the unix sockets the host serves in that folder
(the egress proxy and its model route) and starts the command under the unix-socket filter
(inner_relay.py says how). Standard library only, and no shutil: `sandbox run` and `launch` copy it on
their hot paths.
"""

from __future__ import annotations

import os

__all__ = ["RELAY_DIR", "install", "relay_argv"]

RELAY_DIR = "/tmp/agentbox/relay"  # where bwrap binds the run's relay folder
_HERE = os.path.dirname(os.path.abspath(__file__))
_FILES = ("inner_relay.py", "unix_filter.py")  # the relay imports the filter from its own folder


COMMAND_FILTER = "command.bpf"  # the program the relay installs on the command (built on the host)


def install(run_dir: str, denylist: bool = True) -> None:
    """The relay's files in the run folder; with `denylist`, the host-built program it installs on the command
    (without it, as in a plan that has no denylist, the relay falls back to the unix-socket filter alone)."""
    from agentbox.sandbox.syscall_filter import host_program

    dest = os.path.join(run_dir, "relay")
    os.makedirs(dest, exist_ok=True)
    for name in _FILES:
        with open(os.path.join(_HERE, name), "rb") as src, open(os.path.join(dest, name), "wb") as out:
            out.write(src.read())
    # The whole denylist with new unix sockets refused (datagram socketpairs too, which can be re-aimed at
    # any unix path), stacked on the one bwrap gave the relay: the relay keeps its own sockets, the command none.
    if not denylist:
        return
    with open(os.path.join(dest, COMMAND_FILTER), "wb") as out:
        out.write(host_program(deny_unix=True))


def relay_argv(python: str, mappings: list[tuple[int, str]]) -> list[str]:
    """argv prefix inside the sandbox: port -> socket (a name in the relay folder) for each mapping, then `--`."""
    # -S: the relay needs the standard library alone, and site's .pth files would sit before every command's start
    return [
        python,
        "-I",
        "-S",
        f"{RELAY_DIR}/inner_relay.py",
        *(f"{port}={RELAY_DIR}/{name}" for port, name in mappings),
        "--",
    ]
