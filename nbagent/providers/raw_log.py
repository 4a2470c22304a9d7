"""``NBAGENT_LOG_RAW=DIR``: every raw provider response, redacted, in a dated file.

For debugging a server's wire format: each response body (streamed or not) is
written, as received, to ``DIR/YYYY-MM-DD/HHMMSS.ffffff-<provider>.txt`` once it
ended (or failed), with the provider's secrets and anything shaped like an API
key replaced by ``[redacted]`` (:mod:`nbagent._internal.redaction`). Off when unset.
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Callable
from pathlib import Path

from .._internal.private_files import make_private_folder, open_private
from .base import ProviderEvent
from .http.decoding import Decoder, DecoderWrapper

__all__ = ["RawLogDecoder", "raw_log_dir", "tee"]

logger = logging.getLogger("nbagent")


def raw_log_dir() -> Path | None:
    """The folder ``NBAGENT_LOG_RAW`` names (None when unset)."""
    value = os.environ.get("NBAGENT_LOG_RAW", "").strip()
    return Path(value).expanduser() if value else None


class RawLogDecoder(DecoderWrapper):
    """A decoder that also keeps the bytes it is fed, and writes them at the end."""

    def __init__(
        self, inner: Decoder, provider: str, redact: Callable[[str], str], folder: Path
    ) -> None:
        super().__init__(inner)
        self.provider = provider
        self.redact = redact
        self.folder = folder
        self.body = bytearray()
        self.written = False

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        """The inner decoder's events; the bytes are kept."""
        self.body += chunk
        try:
            events = self.inner.feed(chunk)
        except BaseException:
            self.write()
            raise
        if self.inner.error is not None:
            self.write()
        return events

    def close(self) -> list[ProviderEvent]:
        """The inner decoder's last events; the body is written either way."""
        try:
            return self.inner.close()
        finally:
            self.write()

    def write(self) -> None:
        """Write the body so far, redacted, to a new dated file (once)."""
        if self.written:
            return
        self.written = True
        now = datetime.datetime.now()
        folder = self.folder / now.strftime("%Y-%m-%d")
        path = folder / f"{now.strftime('%H%M%S.%f')}-{self.provider}.txt"
        try:
            make_private_folder(folder)  # 0700: response bodies hold prompts and answers
            text = self.redact(bytes(self.body).decode("utf-8", "replace"))
            with open_private(path, "w") as file:  # 0600
                file.write(text)
        except OSError as exc:  # a debugging aid never breaks a run
            logger.warning("NBAGENT_LOG_RAW: cannot write %s (%s)", path, exc)


def tee(decoder: Decoder, provider: str, redact: Callable[[str], str]) -> Decoder:
    """``decoder`` logging its raw input when ``NBAGENT_LOG_RAW`` is set (else itself)."""
    folder = raw_log_dir()
    if folder is None:
        return decoder
    return RawLogDecoder(decoder, provider, redact, folder)
