"""Statistics over measured runs: run consistency (``consistency``) and the chapter reproduction (``chapter``)."""
