"""Agent-Box: one permission intent, compiled into every coding-agent harness and proven by tests."""

__version__ = "0.1.0"
__all__ = ["__version__"]
