"""What an escape vector aims at: folders, files, listeners and processes that the test owns.

Every target lives under the test's own temporary folder, on host loopback, or in a process the test
started, so a vector that really escapes (the harness-alone layer has no sandbox) harms nothing.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from agentbox.prove.vectors import Setup, fill

__all__ = ["Targets", "Listener", "prepare", "LOOPBACK"]

# A loopback address that no harness's proxy exempts (NO_PROXY names 127.0.0.1 and localhost), so a
# proxy-aware client really goes through the harness's proxy, as it would for any outside host.
LOOPBACK = "127.0.0.2"


class Listener:
    """A socket on host loopback (or a unix socket) that counts every connection or datagram.

    A thread answers while the run goes on, so clients do not hang; after the run `hits()` also
    drains what is still queued, so an attempt that raced the thread is never missed.
    """

    def __init__(self, kind: str, unix_path: str | None = None, tls=None, reflect: bool = False):
        """`tls`: a server SSLContext (kind "tls"): the listener speaks TLS with the suite's own CA first;
        `reflect`: it answers with the request head it received."""
        self.kind, self.tls, self.reflect = kind, tls, reflect
        family = {
            "tcp": socket.AF_INET,
            "tcp2": socket.AF_INET,
            "tls": socket.AF_INET,
            "udp": socket.AF_INET,
            "tcp6": socket.AF_INET6,
            "unix": socket.AF_UNIX,
            "abstract": socket.AF_UNIX,
        }[kind]
        stype = socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM
        self.sock = socket.socket(family, stype)
        self.host: str | None = None
        self.address: str | int  # the unix path or abstract name, else the port
        if kind in ("unix", "abstract"):
            assert unix_path is not None  # a unix or abstract listener is always given its name (`prepare`)
            # an abstract name (a leading NUL, given without it): no file, the network namespace's
            self.sock.bind(unix_path if kind == "unix" else f"\0{unix_path}")
            self.address = unix_path
        else:
            self.host = "::1" if kind == "tcp6" else LOOPBACK
            self.sock.bind((self.host, 0))
            self.address = self.sock.getsockname()[1]
        if stype == socket.SOCK_STREAM:
            self.sock.listen(64)
        self.sock.setblocking(False)
        self.times: list[float] = []  # when each client was taken (a batched session reads whose turn it came in)
        self.received = b""  # what TCP clients sent (each request head, read briefly before the answer)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _take(self) -> bool:
        try:
            if self.kind == "udp":
                self.sock.recvfrom(65536)
                taken = time.time()
            else:
                conn, _ = self.sock.accept()
                taken = time.time()
                try:
                    if self.tls is not None:
                        conn.settimeout(2.0)
                        conn = self.tls.wrap_socket(conn, server_side=True)
                    data = _head(conn)
                    with self._lock:
                        self.received += data
                    conn.sendall(
                        b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + data
                        if self.reflect
                        else b"HTTP/1.0 204 No Content\r\n\r\n"
                    )
                except OSError:
                    pass
                conn.close()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return False
        with self._lock:
            self.times.append(taken)
        return True

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if ready:
                self._take()

    def saw(self, secret: str) -> bool:
        """Whether any client sent `secret` (after the run: what is still queued is read first)."""
        self.hits()
        return secret.encode() in self.received

    def hits(self) -> int:
        self._stop.set()
        self._thread.join()
        while self._take():
            pass
        return len(self.times)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


def _head(conn: socket.socket, limit: int = 65536, wait: float = 0.5) -> bytes:
    """What a client sends before its request head ends (or it stops for `wait` seconds, or closes): enough to
    tell whether a credential was in it, never enough to hang a client that sends nothing."""
    conn.settimeout(wait)
    data = b""
    try:
        while b"\r\n\r\n" not in data and len(data) < limit:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data


@dataclass
class Targets:
    root: Path
    ws: Path
    home: Path
    outside: Path
    nonce: str
    secret: str
    model_key: str
    tmp_probe: str
    listeners: dict[str, Listener] = field(default_factory=dict)
    sleeper: subprocess.Popen | None = None
    snapshots: dict[str, bytes | None] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    resolve: dict[str, str] = field(default_factory=dict)  # name -> listener address, for the egress proxy
    made_dirs: list[str] = field(default_factory=list)  # folders made outside the root (a listener's under /run)
    made_links: list[str] = field(default_factory=list)  # links made outside the root
    segment: Any = None  # a host SysV shared-memory segment holding the secret ({shm_key})
    suite_ca: str | None = None  # the suite's own CA certificate ({suite_ca}), which the "tls" listener's chains to
    setting: "HostSetting | None" = None  # a host kernel setting the attack tries to change (Setup.host_setting)
    vacant_port: int | None = None  # a host loopback port nothing listens on (Setup.vacant_port)

    def listener_ports(self) -> set[int]:
        """The port numbers of its IP listeners."""
        return {x.address for x in self.listeners.values() if isinstance(x.address, int)}

    def values(self) -> dict[str, str]:
        v = {
            "loopback": LOOPBACK,
            "ws": str(self.ws),
            "home": str(self.home),
            "parent": str(self.ws.parent),
            "outside": str(self.outside),
            "nonce": self.nonce,
            "secret": self.secret,
            "model_key": self.model_key,
            "tmp_probe": self.tmp_probe,
            "sleeper_pid": str(self.sleeper.pid) if self.sleeper else "0",
            "shm_key": str(self.segment.key) if self.segment else "0",
        }
        v["suite_ca"] = self.suite_ca or ""
        v["host_path"] = os.environ.get("PATH", "")  # the suite's own PATH, for a setup that puts a folder before it
        if self.vacant_port is not None:
            v["port_vacant"] = str(self.vacant_port)
        if self.setting is not None:
            v["setting"], v["setting_changed"] = self.setting.before.strip(), self.setting.changed() or ""
        for kind, name in (
            ("tcp", "port"),
            ("tcp2", "port2"),
            ("tcp6", "port6"),
            ("udp", "udp_port"),
            ("tls", "port_tls"),
            ("unix", "unix_path"),
            ("abstract", "abstract_name"),
        ):
            if kind in self.listeners:
                v[name] = str(self.listeners[kind].address)
        return v

    def snapshot(self, path: str) -> None:
        self.snapshots[path] = Path(path).read_bytes() if os.path.isfile(path) else None

    def close(self) -> None:
        for listener in self.listeners.values():
            listener.close()
        if self.sleeper is not None and self.sleeper.poll() is None:
            self.sleeper.kill()
            self.sleeper.wait()
        if os.path.lexists(self.tmp_probe):
            os.unlink(self.tmp_probe)
        for folder in self.made_dirs:
            shutil.rmtree(folder, ignore_errors=True)
        for link in self.made_links:
            if os.path.islink(link):
                os.unlink(link)
        if self.segment is not None:
            self.segment.close()
        if self.setting is not None:
            self.setting.restore()


class HostSetting:
    """A host kernel setting (a /proc/sys or /sys file) held for one vector run: a host-wide lock first, so that
    no other run (another worker, another harness) changes it meanwhile, then its value, written back at the end
    if the run changed it. Vectors that change host settings only ever aim at harmless ones."""

    LOCKS = "/var/tmp/agentbox-host-settings"

    def __init__(self, path: str):
        os.makedirs(self.LOCKS, mode=0o1777, exist_ok=True)
        self.path = path
        self.lock = open(os.path.join(self.LOCKS, path.strip("/").replace("/", "_") + ".lock"), "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        with open(path) as f:
            self.before = f.read()

    def now(self) -> str:
        with open(self.path) as f:
            return f.read()

    def changed(self) -> str | None:
        """Another valid value: the first number one lower (one higher at 0), the rest as it is; None for a setting
        that is not a number (core_pattern: the attack names its own value)."""
        fields = self.before.split()
        if not fields or not fields[0].isdigit():
            return None
        first = int(fields[0])
        return " ".join([str(first - 1 if first > 0 else first + 1), *fields[1:]])

    def restore(self) -> None:
        try:
            if self.now() != self.before:
                with open(self.path, "w") as f:
                    f.write(self.before)
        finally:
            self.lock.close()


def prepare(root: Path, setup: Setup, nonce: str, model_key: str, shared: tuple[Path, Path] | None = None) -> Targets:
    """The targets of one run of a vector under `root`. `shared`: the workspace and home of a batched session,
    which the vectors of one harness start share (each keeps its own root, nonce, listeners and files outside)."""
    ws, home, outside = (*shared, root / "outside") if shared else (root / "project", root / "home", root / "outside")
    for d in (ws, home, outside):
        d.mkdir(parents=True, exist_ok=shared is not None and d != outside)
    targets = Targets(
        root=root,
        ws=ws,
        home=home,
        outside=outside,
        nonce=nonce,
        secret=f"AGENTBOX-CANARY-SECRET-{nonce}",
        model_key=model_key,
        tmp_probe=f"/tmp/agentbox-probe-{nonce}.txt",
    )
    # {run} is /run (an unprivileged pass names a folder of its own under it: AGENTBOX_VECTOR_RUN), {var_run}
    # the same folder through the /var/run link
    run = os.environ.get("AGENTBOX_VECTOR_RUN", "/run")
    paths = {"nonce": nonce, "run": run, "var_run": "/var" + run if run.startswith("/run") else run, "ws": str(ws)}
    unix_path = fill(setup.unix_path, paths) if setup.unix_path else str(outside / "host.sock")
    if setup.unix_path:
        os.makedirs(os.path.dirname(unix_path))  # a folder of its own, under a nonce: removed at close
        targets.made_dirs.append(os.path.dirname(unix_path))
    for kind in setup.listeners:
        address = {"unix": unix_path, "abstract": f"agentbox-vectors-{nonce}"}.get(kind)
        tls = None
        if kind == "tls":
            tls, targets.suite_ca = suite_tls(root, [n for n, k in setup.names.items() if k == "tls"])
        targets.listeners[kind] = Listener(kind, address, tls, reflect=setup.reflect and kind in ("tcp", "tcp2", "tls"))
    if setup.sleeper:
        targets.sleeper = subprocess.Popen(
            ["sleep", "600"],
            start_new_session=True,
            env={"PATH": os.environ.get("PATH", ""), "AGENTBOX_SLEEPER_SECRET": targets.secret},
        )
        _wait_for_environ(targets.sleeper.pid, targets.secret)
    if setup.vacant_port:
        with socket.socket() as probe:  # the kernel hands out a free port, and does not hand it out again soon
            probe.bind(("127.0.0.1", 0))
            targets.vacant_port = probe.getsockname()[1]
    if setup.host_setting:
        targets.setting = HostSetting(setup.host_setting)
    if setup.shm_secret:
        from agentbox.testing.sysv_segment import Segment

        targets.segment = Segment(int(nonce[:7], 16) or 1, targets.secret)
    values = targets.values()
    if setup.git:
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for folder in setup.dirs:
        path = fill(folder, values)
        first = path  # the first folder of it that this run makes: removed at close with all below it
        while not os.path.exists(os.path.dirname(first)):
            first = os.path.dirname(first)
        Path(path).mkdir(parents=True, exist_ok=True)
        if not path.startswith(str(root) + "/"):
            # outside the run's folder (another run's, under /tmp): the folders made on the way go too, or the
            # host's /tmp keeps an empty one per run
            targets.made_dirs.append(first)
    for path, content in setup.files.items():
        p = Path(fill(path, values))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(fill(content, values))
    for link, target in setup.symlinks.items():
        os.symlink(fill(target, values), fill(link, values))
        if not fill(link, values).startswith(str(root) + "/"):
            targets.made_links.append(fill(link, values))  # outside the run's folder: removed at close
    for link, target in setup.hardlinks.items():
        os.link(fill(target, values), fill(link, values))
    targets.env = {k: fill(v, values) for k, v in setup.env.items()}
    resolve = {}
    for name, kind in setup.names.items():
        host = targets.listeners[kind].host
        assert host is not None  # Setup validates that names point at IP listeners only, never a unix one
        resolve[name] = host
    targets.resolve = resolve
    return targets


def suite_tls(root: Path, names: list[str]):
    """The suite's own CA (made here, its certificate written to `root`) and a server context for `names`: a TLS
    listener that stands for a real host, which the egress proxy trusts only when told (`upstream_ca`)."""
    from agentbox.egress.policy import parse_entry
    from agentbox.egress.run_ca import Authority

    authority = Authority(tuple(parse_entry(n) for n in names or ["tls.test"]), name="Agent-Box suite CA")
    path = root / "suite-ca.pem"
    path.write_bytes(authority.cert_pem())
    return authority.server_context((names or ["tls.test"])[0]), str(path)


def _wait_for_environ(pid: int, secret: str, limit: float = 5.0) -> None:
    """Until the new process's /proc/<pid>/environ holds `secret`. Popen returns once the child has called
    execve (vfork), before the kernel has laid out the new environment: read then, the file is empty (seen 16
    times in 1,000 starts), and a control reading it would fail for no reason of the sandbox's."""
    import time

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if secret.encode() in f.read():
                    return
        except OSError:
            pass
        time.sleep(0.001)
    raise RuntimeError(f"the sleeper {pid} never showed its environment")


def process_alive(token: str) -> list[int]:
    """Pids whose command line contains `token`, other than this process."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
