"""Runs INSIDE the sandbox (copied into the run folder, standard library only): listen on a loopback
port, start the command, and carry each connection to the host through a unix socket. The port is
bound before the command starts, so there is no readiness race."""

import os
import socket
import sys
import threading


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
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(sock_path)
        except OSError:
            conn.close()
            continue
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main():
    port, sock_path, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
    lo = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lo.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lo.bind(("127.0.0.1", port))
    lo.listen(64)
    pid = os.fork()
    if pid == 0:
        lo.close()
        os.execvp(cmd[0], cmd)
    threading.Thread(target=serve, args=(lo, sock_path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()
