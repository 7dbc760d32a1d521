"""Who answers a loopback connection of the proxy: the host's own service, or a process of a sandbox.

A run on a shared network (`command_network: unrestricted`) shares the host's loopback, so any port of it
that nothing listens on yet is the run's to take (a port >= the kernel's unprivileged start needs no
capability). The model endpoint and a secret's bound host may be such a port (a local model server, a
database on `localhost`) that is down, restarting or not started: a run that listens there first would
receive, from the proxy, the request with the real credential swapped in. So before it sends anything to a
loopback address, the proxy looks up the sockets that can have taken its connection (the accepted one, and
every listener on that port and address, SO_REUSEPORT siblings and wildcards included) and refuses unless
each belongs to a process in the proxy's own PID namespace. Every run has a PID namespace of its own; a
socket whose owner cannot be seen (a process of the same uid that is not dumpable, which every process of a
run is) is refused too, as it cannot be told apart from one.

Linux /proc only: /proc/net/tcp{,6} name each socket's uid and inode, /proc/PID/fd its holders.
"""

from __future__ import annotations

import ipaddress
import os
import socket

__all__ = ["foreign_listener"]

_LISTEN = "0A"


def _address(hexaddr: str) -> tuple[str, int]:
    """/proc/net/tcp's `0100007F:270F` (host byte order per 32-bit word) as ('127.0.0.1', 9999)."""
    host, port = hexaddr.split(":")
    raw = bytes.fromhex(host)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def _sockets(peer: tuple[str, int], local: tuple[str, int]) -> list[tuple[int, int]]:
    """(uid, inode) of every socket that can hold the connection from `local` to `peer`: the accepted one,
    and each listener on the peer's port at its address or a wildcard."""
    wild = {"0.0.0.0", "::"}
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) < 10:
                continue
            here, there, state = _address(cols[1]), _address(cols[2]), cols[3]
            accepted = here == peer and there == local
            listening = state == _LISTEN and here[1] == peer[1] and (here[0] == peer[0] or here[0] in wild)
            if accepted or listening:
                out.append((int(cols[7]), int(cols[9])))
    return out


def _holders(inodes: set[int]) -> dict[int, list[int]]:
    """inode -> the PIDs holding it, among the processes this one may look into."""
    wanted = {f"socket:[{i}]": i for i in inodes}
    found: dict[int, list[int]] = {i: [] for i in inodes}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        folder = f"/proc/{name}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:  # gone, or not ours to see (another uid, not dumpable)
            continue
        for fd in fds:
            try:
                inode = wanted.get(os.readlink(f"{folder}/{fd}"))
            except OSError:
                continue
            if inode is not None:
                found[inode].append(int(name))
    return found


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def foreign_listener(sock: socket.socket) -> str | None:
    """Why the loopback peer of the connected `sock` may be a sandbox's, or None when every socket that can
    answer it belongs to a process of this PID namespace, or to another uid (which no run of this one has)."""
    peer, local = sock.getpeername()[:2], sock.getsockname()[:2]
    peer, local = (_address_of(peer), _address_of(local))
    uid = os.geteuid()
    ours = {inode for owner, inode in _sockets(peer, local) if inode and owner == uid}
    if not ours:
        return None
    mine = _pid_namespace("self")
    for inode, pids in _holders(ours).items():
        if not pids:
            return (
                f"the socket answering {peer[0]}:{peer[1]} (inode {inode}) is held by no process this proxy can "
                "see, as a sandboxed one would be"
            )
        for pid in pids:
            if _pid_namespace(pid) != mine:
                return f"{peer[0]}:{peer[1]} is answered by pid {pid}, a process of another PID namespace (a sandbox)"
    return None


def _address_of(addr: tuple) -> tuple[str, int]:
    ip = ipaddress.ip_address(addr[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(addr[1])
