"""What the pytest plugin gives test authors: the session, the fixtures, the harness runner."""
