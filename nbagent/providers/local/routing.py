"""The tool decision: the model's top-token probabilities plus retrieval scores.

A 135M model alone picks a tool from a few-shot prompt well on its own examples
and poorly on anything else. So the decision adds, for each tool, how well the
request matches the tool's name, description, parameter names and enum values
(word overlap weighted by how specific a word is to one tool), and calibrates
the "none" choice against both. See ``benchmarks/local_tool_eval.py``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ...messages import ToolSpec
from ..base import ModelRequest
from .decision import TOP_N, model_scores, softmax, top_pairs
from .grammar import request_numbers
from .prompts import decision_messages, last_user_text
from .runtime import DECISION_SLOT, LoadedModel

# Weights of the combination (chosen on the eval's development half only).
RETRIEVAL_WEIGHT = 6.0
NONE_BIAS = 0.0
NUMBER_BONUS = 0.35
# Questions *about* a concept ("What is an exchange rate?", "Explain ...", "Why ...")
# want an explanation, not a tool, even when their words match a tool's description.
CONCEPT_QUESTION_BONUS = 8.0
_CONCEPT_QUESTION = re.compile(
    r"^\s*(?:(?:what|what's)\s+(?:is|are)?\s*an?\s+\w|(?:can you |please )?explain\b|why\b"
    r"|who (?:invented|was|is)\b|when (?:was|did)\b|where does\b|recommend\b"
    r"|(?:what|which) is the difference\b|what's the difference\b"
    r"|qu'est-ce qu|was ist (?:ein|eine)\b|qué es (?:un|una)\b)",
    re.IGNORECASE,
)
# A tool with a required number the request does not contain would get an invented one.
MISSING_NUMBER_PENALTY = 6.0

_STOP = set(
    "a an the of to in on for and or is are was be it this that what which who how "
    "me my i you your please can could would will do does with from by at as get give "
    "tell show find let us we there their its into about "
    # German, French and Spanish function words
    "der die das ist wie was es ein eine und von mir mich "
    "le la les est de des du un une et en quel quelle combien "
    "el los las es un una y en qué cuál".split()
)
# Words a request uses for what a tool's description names differently: symbols and
# a few everyday synonyms (not tied to any eval prompt).
_ALIASES = {
    "+": "add sum plus",
    "plus": "add sum",
    "sum": "add plus total",
    "total": "sum add",
    "add": "sum plus",
    "*": "multiply times product",
    "x": "multiply times",
    "×": "multiply times product",
    "times": "multiply product",
    "product": "multiply times",
    "multiply": "times product",
    "-": "subtract minus difference",
    "minus": "subtract difference",
    "/": "divide quotient",
    "divided": "divide quotient",
    "forecast": "weather",
    "rain": "weather",
    "raining": "weather",
    "sunny": "weather",
    "temperature": "weather",
    "hot": "weather temperature",
    "cold": "weather temperature",
    "warm": "weather temperature",
    "convert": "conversion unit",
    "miles": "unit length distance",
    "km": "unit length distance",
    "kilometers": "unit length distance",
    "celsius": "unit temperature",
    "fahrenheit": "unit temperature",
    "kg": "unit weight mass",
    "pounds": "unit weight mass",
    "variables": "variable",
    "defined": "variable namespace",
    "dataframe": "data table frame",
    "df": "dataframe data table",
    "rows": "row table data",
    "columns": "column table data",
    "average": "mean",
    "mean": "average",
    "run": "execute code",
    "execute": "run code",
    "code": "python execute run",
    "python": "code",
    "trading": "stock price",
    "trade": "stock price",
    "shares": "stock price",
    "worth": "price",
    "cost": "price",
    "umbrella": "weather",
    "clock": "time",
    "hour": "time",
    "people": "population",
    "inhabitants": "population",
    "remember": "remind reminder",
    "books": "book",
    "novels": "book fiction",
    "sheet": "table data",
    # A few everyday words in German, French and Spanish (their stems).
    "wetter": "weather",
    "météo": "weather",
    "temp": "weather",
    "tiempo": "weather",
    "clima": "weather",
    "heure": "time",
    "uhrzeit": "time",
    "uhr": "time",
    "hora": "time",
    "hauptstadt": "capital",
    "capitale": "capital",
    "bevölkerung": "population",
    "einwohner": "population",
    "population": "population",
    "población": "population",
    "währung": "currency",
    "monnaie": "currency",
    "devise": "currency",
    "moneda": "currency",
    "aktie": "stock price",
    "action": "stock price",
    "acción": "stock price",
    "kur": "price",
    "cour": "price",
    "prix": "price",
    "precio": "price",
    "preis": "price",
    "taux": "rate",
    "change": "exchange",
    "wechselkur": "exchange rate",
    "cambio": "exchange rate",
    "zeile": "row",
    "zeilen": "row",
    "ligne": "row",
    "fila": "row",
    "durchschnitt": "mean average",
    "durchschnittlich": "mean average",
    "moyenne": "mean average",
    "promedio": "mean average",
    "media": "mean average",
    "variable": "variable",
    "variabl": "variable",
    "zeig": "show",
    "montre": "show",
    "muestra": "show",
    "buch": "book",
    "bücher": "book",
    "livre": "book",
    "libro": "book",
    "busca": "search",
    "cherche": "search",
    "such": "search",
    "erinnere": "remind",
    "rappelle": "remind",
    "recuérdame": "remind",
    "meilen": "miles",
    "kilometern": "km",
    "degré": "temperature",
    "grad": "temperature",
    "convertis": "convert",
    "umrechnen": "convert",
    "rechne": "convert",
    "fois": "times multiply",
    "mal": "times multiply",
    "por": "times multiply",
    "más": "plus add",
}


def raw_words(text: str) -> list[str]:
    """Lower-case words (names split at "_" and camelCase) and operator symbols, no stop words."""
    out = []
    for raw in re.findall(r"[^\W\d_]+|[+*×/\-]", text.replace("_", " ")):
        for word in re.sub(r"(?<=[a-z])(?=[A-Z])", " ", raw).lower().split():
            if word not in _STOP:
                out.append(word)
    return out


def words(text: str) -> list[str]:
    """:func:`raw_words`, lightly stemmed ("cities" -> "city")."""
    return [_stem(word) for word in raw_words(text)]


def _stem(word: str) -> str:
    for suffix, repl in (("ies", "y"), ("ing", ""), ("es", ""), ("s", ""), ("ed", "")):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + repl
    return word


def tool_words(spec: ToolSpec) -> set[str]:
    """The words that describe a tool: name, description, parameters, enum values."""
    parts = [spec.name, spec.description]
    for name, schema in (spec.parameters.get("properties") or {}).items():
        parts += [name, str(schema.get("description") or "")]
        parts += [str(v) for v in schema.get("enum") or []]
    return set(words(" ".join(parts)))


def request_words(text: str) -> set[str]:
    """The request's words plus their aliases."""
    raw = raw_words(text)
    base = [_stem(w) for w in raw]
    extra = [alias for w in raw for alias in words(_alias(w))]
    for symbol in "+*×/":
        if symbol in text:
            extra += words(_ALIASES[symbol])
    return set(base) | set(extra)


def retrieval_scores(text: str, tools: list[ToolSpec]) -> dict[str, float]:
    """How well ``text`` matches each tool, in [0, 1] (IDF-weighted word overlap)."""
    docs = {t.name: tool_words(t) for t in tools}
    asked = request_words(text)
    written = max(1, len(set(words(text))))  # the request's own words, not their aliases
    n = len(tools)
    numbers = bool(request_numbers(text))
    scores = {}
    for spec in tools:
        doc = docs[spec.name]
        if not doc:
            scores[spec.name] = 0.0
            continue
        shared = asked & doc
        weight = sum(math.log(1 + n / sum(w in d for d in docs.values())) for w in shared)
        norm = math.log(1 + n) * math.sqrt(written)
        score = min(1.0, weight / norm)
        props = spec.parameters.get("properties") or {}
        if numbers and any(p.get("type") in ("number", "integer") for p in props.values()):
            score = min(1.0, score + NUMBER_BONUS * (score > 0))
        scores[spec.name] = score
    return scores


def _alias(word: str) -> str:
    """The alias words of ``word``, as written, without a plural "s", or stemmed."""
    singular = word[:-1] if word.endswith("s") else word
    return _ALIASES.get(word) or _ALIASES.get(singular) or _STEMMED_ALIASES.get(_stem(word), "")


def needs_number(spec: ToolSpec) -> bool:
    """True when the tool has a required number parameter."""
    props = spec.parameters.get("properties") or {}
    required = spec.parameters.get("required") or []
    return any((props.get(name) or {}).get("type") in ("number", "integer") for name in required)


_STEMMED_ALIASES = {_stem(k): v for k, v in _ALIASES.items()} | _ALIASES


def decide(
    loaded: LoadedModel,
    request: ModelRequest,
    tools: list[ToolSpec],
    usage: Any,
    mode: str = "combined",
) -> ToolSpec | None:
    """The tool to call for the latest request, or None to answer in text.

    ``mode="model"`` uses the model's probabilities alone (the earlier decision step).
    """
    messages = decision_messages(request, tools)

    def ask(prefix: str) -> list[tuple[str, float]]:
        prompt = messages + ([{"role": "assistant", "content": prefix}] if prefix else [])
        body = {
            "messages": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": TOP_N,
            "id_slot": DECISION_SLOT,
            "cache_prompt": True,
        }
        response = loaded.chat(body, None)
        if "error" in response:
            return []  # the decision prompt does not fit: answer (which reports it)
        used = response.get("usage") or {}
        usage.input_tokens += int(used.get("prompt_tokens", 0))
        usage.output_tokens += 1
        return top_pairs(response)

    names = [t.name for t in tools]
    probs = softmax(model_scores(ask, names + ["none"]))
    if not probs:
        return None
    scores = {k: math.log(max(p, 1e-9)) for k, p in probs.items()}
    if mode != "model":
        text = last_user_text(request)
        retrieval = retrieval_scores(text, tools)
        has_numbers = bool(request_numbers(text))
        for spec in tools:
            scores[spec.name] += RETRIEVAL_WEIGHT * retrieval[spec.name]
            if not has_numbers and needs_number(spec):
                scores[spec.name] -= MISSING_NUMBER_PENALTY
        scores["none"] += NONE_BIAS
        if _CONCEPT_QUESTION.search(text):
            scores["none"] += CONCEPT_QUESTION_BONUS
    choice = max(scores, key=lambda k: scores[k])
    return next((t for t in tools if t.name == choice), None)
