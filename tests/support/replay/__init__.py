"""Replaying recorded provider traffic through a loopback server, and checking the run.

One module per API, each with ``replay_tool_cassette(path, server, ...)`` (a recorded
tool conversation in any cassette format: the agent gets tools answering as recorded,
the server serves the recorded responses, the run and every request are checked
against the recording) and the readers and normalisers it uses:

* ``openai``: Chat Completions (``replay_tool_cassette(path, server)``);
* ``anthropic``: Messages (``replay_tool_cassette(path, server)``);
* ``gemini``: GenerateContent (``replay_tool_cassette(path, server, stream=...)``);
* ``ollama``: ``/api/chat`` (``replay_ollama(path, server)``);
* ``bodies``: response bodies without requests, any API
  (``replay_bodies(provider, paths, server, stream=...)``);
* ``schemas``: comparing tool schemas written by different generators.
"""
