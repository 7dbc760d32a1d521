"""`python -m agentbox.egress serve`: the egress proxy as its own process.

Prints one line `listening {json}` on stdout once every socket accepts connections (and writes the
same JSON to --ready when given); exits 2 for a bad policy file and 4 when it cannot listen or log,
before printing anything, so a parent waiting for the line fails closed. SIGTERM / SIGINT stop it
after every open connection's decision is logged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys

from agentbox.egress.policy import EgressPolicy, Endpoint
from agentbox.egress.proxy import ProxyServer, ProxyStartError, bind_tcp, bind_unix, open_log


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agentbox.egress")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the egress proxy until SIGTERM")
    serve.add_argument("--policy", required=True, help="EgressPolicy as JSON")
    serve.add_argument("--log", required=True, help="decision log (JSON Lines, appended)")
    serve.add_argument("--socket", help="unix socket path to listen on (must not exist)")
    serve.add_argument("--tcp-port", type=int, help="also listen on 127.0.0.1:PORT (0: any free port)")
    serve.add_argument(
        "--route",
        action="append",
        default=[],
        metavar="SOCKET=HOST:PORT",
        help="a unix socket whose connections go to HOST:PORT when the policy allows it (repeatable)",
    )
    serve.add_argument("--ready", help="write the listening JSON here (atomically) once serving")
    serve.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process goes away")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.socket is None and args.tcp_port is None and not args.route:
        print("agentbox egress: give --socket, --tcp-port or --route", file=sys.stderr)
        return 2
    try:
        with open(args.policy) as f:
            policy = EgressPolicy.model_validate_json(f.read())
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        print(f"agentbox egress: policy {args.policy}: {exc}", file=sys.stderr)
        return 2
    routes = {}
    for spec in args.route:
        path, sep, target = spec.rpartition("=")
        try:
            if not sep:
                raise ValueError("expected SOCKET=HOST:PORT")
            routes[path] = Endpoint.parse(target)
        except ValueError as exc:
            print(f"agentbox egress: --route {spec!r}: {exc}", file=sys.stderr)
            return 2
    listeners, bound = [], {}
    try:
        if args.socket:
            listeners.append(bind_unix(args.socket))
        if args.tcp_port is not None:
            listeners.append(bind_tcp(args.tcp_port))
        for path, endpoint in routes.items():
            bound[bind_unix(path)] = endpoint
        log = open_log(args.log)
    except ProxyStartError as exc:
        print(f"agentbox egress: {exc}", file=sys.stderr)
        return exc.exit_code
    asyncio.run(_serve(ProxyServer(policy, log), listeners, bound, args))
    return 0


async def _serve(server: ProxyServer, listeners, routes, args) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await server.start(listeners, routes)
    ready = {"pid": os.getpid(), "socket": args.socket}
    ready["tcp"] = list(listeners[-1].getsockname()) if args.tcp_port is not None else None
    ready["routes"] = sorted(sock.getsockname() for sock in routes)
    if args.ready:
        with open(args.ready + ".tmp", "w") as f:
            json.dump(ready, f)
        os.replace(args.ready + ".tmp", args.ready)
    print("listening " + json.dumps(ready), flush=True)
    parent = os.getppid() if args.exit_with_parent else None
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            if parent is not None and os.getppid() != parent:  # orphaned: nobody will stop us
                break
    await server.close()


if __name__ == "__main__":
    sys.exit(main())
