"""Runs INSIDE the sandbox (copied into the run's relay folder with unix_filter.py; standard library only):
listen on loopback ports, start the command, and carry each port's connections to the host through its
unix socket (the model socket, the egress proxy's socket).

    inner_relay.py PORT=SOCKET [PORT=SOCKET ...] -- CMD...

Every port is bound before the command starts, so there is no readiness race. The command, and with it
every process of the run, gets the unix-socket filter just before exec: the relay keeps its own unix
sockets, nothing it starts can open one. A filter that cannot be applied refuses the command (exit 4).
The relay is the namespace's first process: when it dies, the namespace and the run go with it.
"""

import os
import signal
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's folder out

import unix_filter  # noqa: E402  (copied next to this file)

REFUSED = 4
# The launcher forwards these to every process of the run; the harness decides what they mean, and a relay
# killed by one would take the whole run down with it.
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Python ignores these itself; an ignored signal survives exec, so the command gets the defaults back.
_RESTORED = (*_IGNORED, signal.SIGPIPE, signal.SIGXFSZ)


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listener, sock_path):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        # a relay forwards each piece as it comes: with Nagle's algorithm on, a piece written while the last is
        # unacknowledged waits for the harness's delayed ACK (40 ms on loopback), once per streamed model event
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(sock_path)
        except OSError:
            conn.close()
            upstream.close()
            continue
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def parse(argv):
    cut = argv.index("--")
    mappings = []
    for spec in argv[:cut]:
        port, _, path = spec.partition("=")
        mappings.append((int(port), path))
    return mappings, argv[cut + 1 :]


def bind(port):
    lo = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lo.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lo.bind(("127.0.0.1", port))
    lo.listen(64)
    return lo


def start(cmd, listeners):
    for lo in listeners:
        lo.close()
    for signum in _RESTORED:
        signal.signal(signum, signal.SIG_DFL)
    try:
        # the host-built denylist (unix sockets refused) where it was installed, else the unix-socket filter
        here = os.path.dirname(os.path.abspath(__file__))
        try:
            with open(os.path.join(here, "command.bpf"), "rb") as f:
                code = f.read()
        except FileNotFoundError:
            code = None
        unix_filter.install(code) if code else unix_filter.apply()
    except OSError as exc:
        os.write(
            2,
            f"agent-box: the sandbox's unix-socket filter cannot be applied ({exc}); "
            "refusing to start the command\n".encode(),
        )
        os._exit(REFUSED)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        os.write(2, f"agent-box: cannot start {cmd[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)


def main():
    mappings, cmd = parse(sys.argv[1:])
    listeners = [(bind(port), path) for port, path in mappings]
    for signum in _IGNORED:
        signal.signal(signum, signal.SIG_IGN)
    # Non-dumpable, before the command exists (exec makes it dumpable again): the processes it starts run as
    # the same user and must not ptrace the relay or read its memory to borrow a unix socket.
    import ctypes

    pr_set_dumpable = 4
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        os.write(2, b"agent-box: the relay cannot make itself non-dumpable; refusing to start the command\n")
        sys.exit(REFUSED)
    pid = os.fork()
    if pid == 0:
        start(cmd, [lo for lo, _ in listeners])
    for lo, path in listeners:
        threading.Thread(target=serve, args=(lo, path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()
