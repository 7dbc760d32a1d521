"""This checkout's entry point to the packaged suite's `agentbox/suite/negative/test_attempts_meet_a_mechanism.py`: its tests, collected here
too, so that `pytest negative` runs them from a checkout. Users get them anywhere with `pytest --agentbox-suite`."""

from agentbox.suite.negative.test_attempts_meet_a_mechanism import *  # noqa: F401,F403
