"""The embedded model's tool eval (see run.py)."""
