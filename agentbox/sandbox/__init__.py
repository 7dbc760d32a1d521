"""OS sandbox backends. bubblewrap is the first; each backend is plain functions: request in, argv out."""
