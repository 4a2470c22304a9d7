"""Steering a small model's choices: the tool decision from its top-token probabilities.

:func:`model_scores` reads the probability the model gives each option (the tool
names and "none") from the top tokens of its first reply token, following shared
prefixes (``get_weather`` / ``get_time``) with one more step each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

# How many top tokens the runtime reports per step; an option outside them is
# scored as if just below the last one.
TOP_N = 20
_MAX_STEPS = 4

Ask = Callable[[str], list[tuple[str, float]]]
"""Runs the decision prompt with ``prefix`` prefilled; the top (token, logprob) pairs."""


def model_scores(ask: Ask, options: list[str]) -> dict[str, float]:
    """Log-probabilities of the options (approximate: only the top tokens are known)."""
    scores: dict[str, float] = {}
    _score(ask, "", options, 0.0, scores, 0)
    return scores


def _score(
    ask: Ask, prefix: str, options: list[str], base: float, out: dict[str, float], depth: int
) -> None:
    top = ask(prefix)
    floor = (min(lp for _, lp in top) if top else 0.0) - 1.0
    groups: dict[str, list[str]] = {}
    best: dict[str, tuple[str, float]] = {}
    for option in options:
        rest = option[len(prefix) :]
        matches = [(t, lp) for t, lp in top if t and (rest.startswith(t) or t.startswith(rest))]
        if not matches:
            out[option] = base + floor
            continue
        token, logprob = max(matches, key=lambda m: m[1])
        best[option] = (token, logprob)
        groups.setdefault(token, []).append(option)
    for token, members in groups.items():
        logprob = best[members[0]][1]
        if len(members) == 1 or depth >= _MAX_STEPS:
            for option in members:
                out[option] = base + logprob
            continue
        ended = [o for o in members if len(o) <= len(prefix) + len(token)]
        for option in ended:  # a name that is a prefix of another wins once complete
            out[option] = base + logprob
        longer = [o for o in members if o not in ended]
        if longer:
            _score(ask, prefix + token, longer, base + logprob, out, depth + 1)


def top_pairs(response: Any) -> list[tuple[str, float]]:
    """The (token, logprob) pairs of a chat completion's first generated token."""
    try:
        content = response["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return []
    if not content:
        return []
    return [(t["token"], float(t["logprob"])) for t in content[0].get("top_logprobs") or []]


def softmax(scores: dict[str, float]) -> dict[str, float]:
    """Normalise log-scores into probabilities over the options."""
    if not scores:
        return {}
    top = max(scores.values())
    weights = {k: math.exp(v - top) for k, v in scores.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


# Added to the logits of the tokens of this turn's tool results while the answer is
# written. A small model often restates a result from its own arithmetic ("1234 +
# 4321 = 5567" after the tool said 5555); a mild pull towards the result's tokens
# makes it copy instead. Larger values made it open answers with stray digits.
COPY_BIAS = 1.0
