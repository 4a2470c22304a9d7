"""Shared helpers for the test suite: import them, never copy them.

- ``agents``: the one agent factory (a ScriptedModel or a loopback server behind an Agent).
- ``env``: the environment variables no test may inherit (provider keys, nbagent settings).
- ``history``: one private history per test (``history_home``, ``history_db``, ``history_env``).
- ``servers``: one fake server per wire format, with per-API reply builders.
- ``kernel``: one real-ipykernel helper.
- ``network``: the guard that fails a test opening a non-loopback connection.
"""
