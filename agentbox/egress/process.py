"""The egress proxy as a child process: start it, know when it listens, notice when it dies.

A run guarded by the proxy must not outlive it unnoticed: `watch` calls back when the process exits
without `stop()`, so the caller can end the run (fail closed). Its stderr is drained into a short
tail, so a proxy that fails to start explains why in the raised error.
"""

from __future__ import annotations

import collections
import json
import os
import select
import subprocess
import sys
import threading
import time

from agentbox.egress.policy import EgressPolicy, Endpoint
from agentbox.egress.proxy import ProxyStartError

__all__ = ["ProxyProcess"]


class ProxyProcess:
    def __init__(
        self,
        policy: EgressPolicy,
        policy_path: str,
        log_path: str,
        socket_path: str | None = None,
        tcp_port: int | None = None,
        ready_timeout: float = 15.0,
        routes: dict[str, Endpoint] | None = None,
    ):
        self.policy, self.policy_path, self.log_path = policy, policy_path, log_path
        self.socket_path, self.tcp_port, self.ready_timeout = socket_path, tcp_port, ready_timeout
        self.routes = dict(routes or {})
        self.proc: subprocess.Popen[str] | None = None
        self.ready: dict = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._stopping = False

    @property
    def pid(self) -> int:
        assert self.proc is not None  # started
        return self.proc.pid

    @property
    def proxy_url(self) -> str:
        host, port = self.ready["tcp"]
        return f"http://{host}:{port}"

    def argv(self) -> list[str]:
        argv = [
            sys.executable,
            "-P",  # not the working folder first on the import path: it may be a run's workspace
            "-m",
            "agentbox.egress",
            "serve",
            "--policy",
            self.policy_path,
            "--log",
            self.log_path,
            "--exit-with-parent",
        ]
        if self.socket_path:
            argv += ["--socket", self.socket_path]
        if self.tcp_port is not None:
            argv += ["--tcp-port", str(self.tcp_port)]
        for path, endpoint in self.routes.items():
            argv += ["--route", f"{path}={endpoint}"]
        return argv

    def start(self) -> "ProxyProcess":
        with open(self.policy_path, "w") as f:
            f.write(self.policy.model_dump_json(indent=2))
        self.proc = subprocess.Popen(
            self.argv(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            close_fds=True,
        )
        threading.Thread(target=self._drain, daemon=True).start()
        line = self._first_line()
        if not line.startswith("listening "):
            self.stop()
            tail = "".join(self._stderr).strip() or "no output"
            raise ProxyStartError(f"egress proxy process did not start (exit {self.proc.returncode}): {tail}")
        self.ready = json.loads(line.split(" ", 1)[1])
        return self

    def _first_line(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None  # start() opened it with stdout=PIPE
        deadline = time.monotonic() + self.ready_timeout
        while (left := deadline - time.monotonic()) > 0:
            if select.select([self.proc.stdout], [], [], left)[0]:
                return self.proc.stdout.readline()
        return ""

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None  # start() opened it with stderr=PIPE
        for line in self.proc.stderr:
            self._stderr.append(line)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def watch(self, on_death) -> threading.Thread:
        """Call `on_death(returncode)` from a daemon thread if the proxy exits before `stop()`."""

        def wait() -> None:
            assert self.proc is not None  # watch() follows start()
            code = self.proc.wait()
            if not self._stopping:
                on_death(code)

        thread = threading.Thread(target=wait, name="agentbox-egress-watch", daemon=True)
        thread.start()
        return thread

    def stop(self, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        self._stopping = True
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stdout is not None  # start() opened it with stdout=PIPE
        self.proc.stdout.close()
        for path in (self.socket_path, *self.routes) if self.ready else ():
            if path and os.path.exists(path):
                os.unlink(path)  # it bound the socket, then was killed before removing it
        return self.proc.returncode

    def __enter__(self) -> "ProxyProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
