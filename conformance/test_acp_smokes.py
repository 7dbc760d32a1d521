"""This checkout's entry point to the packaged suite's `agentbox/suite/conformance/test_acp_smokes.py`: its tests, collected here
too, so that `pytest conformance` runs them from a checkout. Users get them anywhere with `pytest --agentbox-suite`."""

from agentbox.suite.conformance.test_acp_smokes import *  # noqa: F401,F403
