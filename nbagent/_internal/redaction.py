"""Secret redaction: one marker and one rule for every byte nbagent writes.

The history database, recordings, log lines and error texts all replace known
secret values (an agent's API key, the values of key-like environment variables)
and text shaped like an API key by :data:`REDACTED`. A *fragment* of a known
secret (10 characters or more, e.g. the first 16 characters of a key left by a
cut) is replaced too, so text may be cut before or after redaction. Still, cut
with :func:`cut`, which redacts first. A leaf module: it imports nothing from
nbagent.

Every :class:`Scrubber` made with secrets adds them to the process's known
secrets, so the outputs that do not know the agent (recordings, the log) redact
them as well (:func:`scrub`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .bounded import dumps as bounded_dumps

REDACTED = "[redacted]"
MIN_FRAGMENT = 10
"""A piece of a known secret this long or longer is redacted wherever it appears."""

# Shapes of common API keys and bearer tokens. Only applied to free text (prompts,
# answers, tool output), never to opaque provider data such as signatures.
# One leading \b and no (?i:) group: about 3x faster on plain text than the same
# alternatives each with their own \b (benchmarks/bench_redaction.py).
_KEY_PATTERNS = re.compile(
    r"\b(?:sk-(?:(?:ant-|proj-|svcacct-|admin-)[A-Za-z0-9_\-]{6,}|[A-Za-z0-9_\-]{16,})"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|(?:ghp|gho|ghu|ghs|github_pat|xox[abp]|hf)_[A-Za-z0-9_]{16,}"
    r"|[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._\-]{16,})"
)
_SECRET_NAMES = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)
_WINDOW = MIN_FRAGMENT // 2
"""Every fragment of MIN_FRAGMENT characters holds a whole aligned window this long."""


def collect_secrets(
    options: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> list[str]:
    """Secret values an agent knows: its ``api_key`` option and key-like environment variables.

    Both ``env`` and the process environment are searched: redacting more is harmless.
    """
    env = os.environ if env is None else ChainMap(dict(env), dict(os.environ))
    found = [str(v) for k, v in (options or {}).items() if "key" in k.lower() and v]
    found += [v for k, v in env.items() if _SECRET_NAMES.search(k) and v]
    # Short values ("1", "true") would redact ordinary text; real keys are long.
    return sorted({s for s in found if len(s) >= 8}, key=len, reverse=True)


_known: set[str] = set()
_known_lock = threading.Lock()


def remember(secrets: Iterable[str]) -> None:
    """Add ``secrets`` to the process's known secrets (redacted by :func:`scrub`)."""
    new = {s for s in secrets if isinstance(s, str) and len(s) >= 8} - _known
    if new:
        with _known_lock:
            _known.update(new)


class Scrubber:
    """Replaces known secret values, their fragments and key-shaped text by ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)
        remember(self.secrets)

    def exact(self, text: str) -> str:
        """``text`` with every known secret value (and fragment of 10+ characters) replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if any(len(s) >= MIN_FRAGMENT for s in self.secrets):
            text = self._fragments(text)
        return text

    def text(self, text: str) -> str:
        """``text`` with known secrets (and their fragments) and key-shaped text replaced."""
        return _KEY_PATTERNS.sub(REDACTED, self.exact(text))

    def json(self, value: Any) -> str | None:
        """``value`` as JSON with known secrets removed (None stays None)."""
        if value is None:
            return None
        return self.exact(json.dumps(value, ensure_ascii=False, default=str))

    def json_text(self, value: Any) -> str | None:
        """``value`` (free text: a model's tool arguments) as JSON, redacted as :meth:`text`.

        A value nested too deep for ``json`` is stored bounded (nbagent._internal.bounded).
        """
        if value is None:
            return None
        try:
            data = json.dumps(value, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            data = bounded_dumps(value)
        return self.text(data)

    def _fragments(self, text: str) -> str:
        spans = []
        for secret in self.secrets:
            if len(secret) >= MIN_FRAGMENT:
                spans += _fragment_spans(text, secret)
        if not spans:
            return text
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        pieces, at = [], 0
        for start, end in merged:
            pieces += [text[at:start], REDACTED]
            at = end
        pieces.append(text[at:])
        return "".join(pieces)


def _fragment_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Where pieces of ``secret`` of MIN_FRAGMENT characters or more occur in ``text``.

    Looks for every aligned window of the secret (a handful of ``str.find``), then
    grows each hit while text and secret agree: linear in the text for a real key.
    """
    spans: list[tuple[int, int]] = []
    starts = list(range(0, len(secret) - _WINDOW + 1, _WINDOW))
    for offset in starts:
        window = secret[offset : offset + _WINDOW]
        found = text.find(window)
        while found != -1:
            lo, s_lo = found, offset
            while lo > 0 and s_lo > 0 and text[lo - 1] == secret[s_lo - 1]:
                lo, s_lo = lo - 1, s_lo - 1
            hi, s_hi = found + _WINDOW, offset + _WINDOW
            while hi < len(text) and s_hi < len(secret) and text[hi] == secret[s_hi]:
                hi, s_hi = hi + 1, s_hi + 1
            if hi - lo >= MIN_FRAGMENT:
                spans.append((lo, hi))
                found = text.find(window, hi)
            else:
                found = text.find(window, found + 1)
    return spans


def scrub_optional(scrub: Callable[[str], str], text: str | None) -> str | None:
    """``scrub(text)``, keeping None as None."""
    return None if text is None else scrub(text)


def process_scrubber() -> Scrubber:
    """A Scrubber of every secret this process knows: remembered ones and key-like env vars."""
    scrubber = Scrubber.__new__(Scrubber)
    with _known_lock:
        known = set(_known)
    scrubber.secrets = sorted(known | set(collect_secrets()), key=len, reverse=True)
    return scrubber


def scrub(text: str) -> str:
    """``text`` with every secret the process knows, and key-shaped text, replaced."""
    return process_scrubber().text(text)


def scrub_stream(body: str, scrubber: Scrubber | None = None) -> str:
    """An SSE or NDJSON body whose events' string values, read in order, spell no secret.

    A server streams an answer a few characters per event, so a key it echoes is in
    no single event. The values found at the same place in every JSON event (e.g.
    ``choices[0].delta.content``) are joined in order and searched (whole secrets and
    fragments of 10+ characters); the events holding a match are rewritten with their
    part of it replaced by ``[redacted]``. A body without a match comes back
    unchanged, byte for byte.
    """
    scrubber = scrubber or process_scrubber()
    secrets = [s for s in scrubber.secrets if len(s) >= MIN_FRAGMENT]
    if not secrets or ("data:" not in body and "\n{" not in body):
        return body
    lines = body.split("\n")
    events: dict[int, tuple[str, Any]] = {}
    fields: dict[tuple[Any, ...], list[tuple[int, Any, Any, str]]] = {}
    for index, line in enumerate(lines):
        prefix = "data: " if line.startswith("data: ") else "data:" * line.startswith("data:")
        payload = line[len(prefix) :]
        if not payload.lstrip().startswith(("{", "[")):
            continue
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            continue
        events[index] = (prefix, data)
        for path, container, key, text in _string_leaves(data):
            fields.setdefault(path, []).append((index, container, key, text))
    changed: set[int] = set()
    for leaves in fields.values():
        changed |= _redact_field(leaves, secrets)
    for index in changed:
        prefix, data = events[index]
        lines[index] = prefix + json.dumps(data, ensure_ascii=False)
    return "\n".join(lines)


def _redact_field(leaves: list[tuple[int, Any, Any, str]], secrets: list[str]) -> set[int]:
    """Redact secrets spelled across one field's values; the events changed."""
    joined = "".join(leaf[3] for leaf in leaves)
    spans = [span for secret in secrets for span in _fragment_spans(joined, secret)]
    if not spans:
        return set()
    hit = bytearray(len(joined))
    for start, end in spans:
        hit[start:end] = b"\x01" * (end - start)
    at, changed = 0, set()
    for index, container, key, text in leaves:
        marks = hit[at : at + len(text)]
        continues = at > 0 and len(marks) > 0 and marks[0] == 1 and hit[at - 1] == 1
        at += len(text)
        if any(marks):
            kept = "".join(ch if not m else "\0" for ch, m in zip(text, marks, strict=True))
            if continues:  # the marker went into an earlier event: one marker per secret
                kept = kept.lstrip("\0")
            container[key] = re.sub("\0+", REDACTED, kept)
            changed.add(index)
    return changed


def _string_leaves(data: Any) -> list[tuple[tuple[Any, ...], Any, Any, str]]:
    """(path, container, key, text) for every string value in ``data``."""
    found: list[tuple[tuple[Any, ...], Any, Any, str]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        path, node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, value in items:
            if isinstance(value, str):
                found.append(((*path, key), node, key, value))
            elif isinstance(value, (dict, list)):
                stack.append(((*path, key), value))
    return found


def scrub_known(text: str) -> str:
    """``text`` with every secret the process knows (and their fragments) replaced.

    No key-shape patterns: safe for HTML holding base64 data (an image could hold
    ``AIza...`` by chance).
    """
    return process_scrubber().exact(text)


def cut(text: str, limit: int, scrubber: Scrubber | None = None) -> str:
    """``text`` redacted (by ``scrubber``, else :func:`scrub`), then cut to ``limit`` characters.

    Redacting first means a cut can never leave a piece of a key that redaction
    would no longer recognise.
    """
    text = scrubber.text(text) if scrubber is not None else scrub(text)
    if len(text) <= limit:
        return text
    marker = text.rfind(REDACTED, max(0, limit - len(REDACTED)), limit + len(REDACTED))
    if 0 <= marker < limit < marker + len(REDACTED):
        limit = marker  # never half a marker
    return text[:limit] + "…"


class RedactingFilter(logging.Filter):
    """A logging filter that redacts every known secret from a record's message.

    The record's message is formatted here (arguments merged), redacted, and made
    one terminal-safe line by ``clean``, a function given by the caller (the
    ``nbagent._internal.safe_text`` rule).
    """

    def __init__(self, clean: Callable[[str], str] = lambda s: s) -> None:
        super().__init__("")
        self._clean = clean

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record``'s message; never drops a record."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: show it as it is
            message = f"{record.msg!r} {record.args!r}"
        record.msg = self._clean(scrub(message))
        record.args = None
        if record.exc_info and not record.exc_text:
            # The handler's formatter uses exc_text as it is: redact the traceback too.
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        return True
