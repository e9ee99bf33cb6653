"""rtx: a compiler for distributed deep-learning training (Python frontend)."""
