"""Steering a small model's choices with its logits.

:func:`choose` picks the likeliest of a few options (the tool names and "none")
from the logits, and :func:`copy_bias` nudges an answer towards this turn's tool
results (see ``benchmarks/local_tool_eval.py`` for what these bought).
"""

from __future__ import annotations

from typing import Any

from ..base import ModelRequest
from .runtime import tokens


def choose(llm: Any, prompt: str, options: list[str]) -> str:
    """The option the model most likely writes after ``prompt``.

    A constrained greedy choice over the options' tokens: at each point where the
    options still left differ, take the token with the highest logit among theirs.
    Names with distinct first tokens are decided by one forward pass over the prompt
    (same outcome as greedy decoding under a grammar of the names, but without
    partial tokens: a grammar also admits "c" or "n" as a first token, and a small
    model's favourite partial token then decides between unrelated names).
    """
    ids = tokens(llm, prompt)
    left = [(o, t) for o in options if (t := tokens(llm, o))]
    depth = 0
    while len(left) > 1:
        logits = _logits_after(llm, ids)
        best = max({t[depth] for _, t in left}, key=lambda k: logits[k])
        left = [(o, t) for o, t in left if t[depth] == best]
        ids = ids + [best]
        depth += 1
        # A name that is a prefix of another ("add", "add_all") wins once it is complete.
        ended = [(o, t) for o, t in left if len(t) == depth]
        if ended:
            return ended[0][0]
    return left[0][0] if left else options[-1]


def _logits_after(llm: Any, ids: list[int]) -> Any:
    """Next-token logits after the tokens ``ids``; reuses the context's cached common prefix."""
    import numpy as np

    cached = llm.input_ids[: llm.n_tokens].tolist()
    keep = 0
    limit = min(len(cached), len(ids) - 1)  # evaluate at least one token
    while keep < limit and cached[keep] == ids[keep]:
        keep += 1
    llm.n_tokens = keep
    llm.eval(ids[keep:])
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


# Added to the logits of the tokens of this turn's tool results while the answer is
# written. A small model often restates a result from its own arithmetic ("1234 +
# 4321 = 5567" after the tool said 5555); a mild pull towards the result's tokens
# makes it copy instead. Larger values made it open answers with stray digits.
COPY_BIAS = 1.0


def copy_bias(llm: Any, request: ModelRequest) -> dict[int, float]:
    """:data:`COPY_BIAS` for every token of this turn's successful tool results."""
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "assistant":
        return {}
    ids: set[int] = set()
    for tool_round in last.rounds or []:
        for result in tool_round.results:
            if result.ok and result.content:
                # Both spellings: with and without the space a word takes mid-sentence.
                for text in (result.content, " " + result.content):
                    ids.update(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    return {token: COPY_BIAS for token in ids}
