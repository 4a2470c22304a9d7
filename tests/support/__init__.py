"""Shared helpers for the test suite: import them, never copy them.

- ``agents``: the one agent factory (a ScriptedModel or a loopback server behind an Agent).
- ``env``: the environment variables no test may inherit (provider keys, nbagent settings).
- ``network``: the guard that fails a test opening a non-loopback connection.
- ``history``: one private history per test (``history_home``, ``history_db``, ``history_env``).
- ``servers``: one fake server for every wire format, with per-API reply builders.
- ``scripted``: a deterministic model (``ScriptedReplies``) answering in the Chat Completions
  or Ollama format.
- ``cassettes``: one loader for every recorded-traffic format.
- ``replay``: recorded provider traffic replayed through a loopback server, per API.
- ``kernel``: one real-ipykernel helper.
- ``html``: an HTML inspector (what a browser builds) and the check that a rendering is inert.

The ``test_*.py`` modules here test these helpers themselves.
"""
