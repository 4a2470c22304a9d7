"""Checks shared by the core-engine tests."""

from __future__ import annotations

from nbagent import Conversation


def assert_history_valid(conversation: Conversation) -> None:
    """The history invariant: roles alternate user/assistant, every call has exactly one
    result (same ids, call order), and the JSON round trip keeps it all."""
    roles = [m.role for m in conversation.messages]
    assert roles == ["user", "assistant"] * (len(roles) // 2), roles
    for message in conversation.messages:
        if message.role == "assistant":
            assert message.content.strip(), "an assistant message has no content"
        for rnd in message.rounds or []:
            assert [c.id for c in rnd.calls] == [r.call_id for r in rnd.results]
            assert len({c.id for c in rnd.calls}) == len(rnd.calls)
    again = Conversation.from_json(conversation.to_json())
    assert again.to_dict() == conversation.to_dict()
