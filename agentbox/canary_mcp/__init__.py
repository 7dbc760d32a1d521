"""A canary MCP server: real stdio MCP tools whose every invocation lands in a log the test owns.

Tests never trust what a harness *says* it did with an MCP tool; they read this log. Importing the
package only pulls in the log reader, so test code can use `CanaryLog` without loading the MCP SDK.
"""

from agentbox.canary_mcp.log import (
    DEFAULT_SECRET,
    SERVER_NAME,
    TOOL_NAMES,
    CanaryLog,
    canary_command,
)

__all__ = ["CanaryLog", "canary_command", "DEFAULT_SECRET", "SERVER_NAME", "TOOL_NAMES"]
