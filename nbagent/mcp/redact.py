"""How a server's command line and URL are shown: credentials redacted.

``%agent mcp list``, ``repr(MCPServer)`` and every error naming a server show
its command or URL. Servers take credentials there (``--token=...``,
``--api-key KEY``, ``?api_key=...``, ``https://user:password@host``), so those
values are replaced by ``[redacted]``, as is any key-shaped text. The values
found are also added to the process's known secrets, so the history, the log
and recordings redact them wherever they appear (a tool echoing its token).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .._internal.redaction import REDACTED, scrub

_SECRET_WORDS = {
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "pass", "auth",
    "authorization", "credential", "credentials", "sig", "signature", "cookie", "bearer",
}  # fmt: skip


def secret_name(name: str) -> bool:
    """Whether a flag, query parameter, header or variable name says its value is a secret.

    ``--api-key``, ``access_token``, ``apiKey``, ``X-Auth-Token``, ``client_secret``: a
    word of the name (split at ``-``, ``_``, ``.`` and camelCase) is a secret word.
    """
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in _SECRET_WORDS for word in re.split(r"[^a-z0-9]+", words))


def command_secrets(args: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values of a command line (flag values) and of its environment."""
    found = []
    for index, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag.startswith("-") and secret_name(flag):
            if eq:
                found.append(value)
            elif index + 1 < len(args) and not args[index + 1].startswith("-"):
                found.append(args[index + 1])
        elif arg.startswith(("http://", "https://")):
            found += url_secrets(arg)
    found += [v for k, v in (env or {}).items() if secret_name(k) and isinstance(v, str)]
    return [value for value in found if value]


def url_secrets(url: str, headers: Mapping[str, str] | None = None) -> list[str]:
    """The secret values of a URL (password, secret-named query parameters) and headers."""
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
    except ValueError:
        return []
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if secret_name(k)]
    found += [v for k, v in (headers or {}).items() if secret_name(k) and isinstance(v, str)]
    return [value for value in found if value]


def shown_command(command: str, args: Sequence[str]) -> str:
    """``command args...`` as shown to the user, with secret values redacted."""
    shown: list[str] = []
    hide_next = False
    for arg in [command, *args]:
        flag, eq, _value = arg.partition("=")
        if hide_next and not arg.startswith("-"):
            shown.append(REDACTED)
        elif flag.startswith("-") and secret_name(flag) and eq:
            shown.append(f"{flag}={REDACTED}")
        elif arg.startswith(("http://", "https://")):
            shown.append(shown_url(arg))
        else:
            shown.append(scrub(arg))
        hide_next = flag.startswith("-") and secret_name(flag) and not eq
    return " ".join(shown)


def shown_url(url: str) -> str:
    """``url`` as shown to the user: password and secret-named query values redacted."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        user = parts.username
    except ValueError:
        return scrub(url)
    netloc = f"{user}:{REDACTED}@{host}" if parts.password else parts.netloc
    query = "&".join(
        f"{k}={REDACTED}" if secret_name(k) else (f"{k}={v}" if v else k)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    return scrub(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


def hide(text: str, secrets: Sequence[str]) -> str:
    """``text`` (an error message) with ``secrets`` and key-shaped text redacted."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return scrub(text)
