"""OS sandbox backends, found by name (`backend.get_backend`) behind one contract (`backend.SandboxBackend`).

bubblewrap is the first; each backend is plain functions: request in, argv out."""

# The backend a record that names none ran under: every record before the field existed was bubblewrap's. Plain
# data here, so the evidence index (a launch's hot path) and the claims read one definition.
DEFAULT_BACKEND = "bwrap"
