"""This checkout's entry point to the packaged suite's `agentbox/suite/negative/test_batched.py`: its tests, collected here
too, so that `pytest negative` runs them from a checkout. Users get them anywhere with `pytest --agentbox-suite`."""

from agentbox.suite.negative.test_batched import *  # noqa: F401,F403
