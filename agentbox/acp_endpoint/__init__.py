"""`agent-box acp <profile>`: Agent-Box as the ACP agent an editor starts.

An editor (Zed, JetBrains, a Neovim plugin) starts an ACP agent over stdio. This package is that agent:
it gates the profile on evidence taken in ACP mode (`gate`), starts the harness's own ACP agent (an
adapter or a native subcommand, `agentbox/data/acp.yaml`) inside the compiled sandbox (`sandboxed`),
and relays the protocol both ways with the `acp` SDK (`relay`), holding the surfaces the client performs
outside the sandbox to the intent (`policy`, `view`, `terminals`). `endpoint` ties them to one Run.
"""

from __future__ import annotations

__all__ = ["main"]


def main(*args, **kwargs) -> int:
    from agentbox.acp_endpoint.endpoint import (
        main as _main,
    )  # imports no `acp` module: the endpoint loads the SDK its own way (sdk.py)

    return _main(*args, **kwargs)
