"""Tool calls written as text, and ``<think>`` blocks, in a reply's answer text.

Local servers without a tool-call parser (llama.cpp without ``--jinja``, vLLM
without ``--tool-call-parser``, many Ollama models, LM Studio) return the model's
calls as plain text in one of a few formats:

* Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
* Llama 3: ``<|python_tag|>{"name": ..., "parameters": {...}}`` or the same JSON
  object bare, as the whole reply
* Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]`` or
  ``[TOOL_CALLS]name[ARGS]{...}``
* a fenced JSON block (```` ```json ````) holding such an object or a list of them

:class:`TextCallScanner` finds them in streamed text, split anywhere, holding back
only what may still turn out to be a call (a possible marker at the end of a
chunk, or the inside of a call block) and releasing the rest at once.
``<think>...</think>`` goes to the round's thinking.

Text the model only quotes never runs a tool. A block becomes calls only when it is
where a call stands, not inside prose:

* a marked block (``<tool_call>``, ``<|python_tag|>``, ``[TOOL_CALLS]``) with nothing
  but whitespace or further call blocks after it (a block with prose after it is a
  quotation, shown as text); an unclosed one only when it is the whole reply;
* a fenced JSON block (the same rule: nothing after it) or a bare JSON object (the
  whole reply), only when every call names an offered tool (ambiguous formats);
* never when its text appears in the request's user turns or tool results (the
  model is quoting the page, the prompt or a result).

A marked call to a tool that was not offered becomes a call anyway, so the model
gets the "Unknown tool" error result instead of the markup being the answer. When
tools are forbidden (the forced final answer), marked call blocks are left out of
the answer: the user never sees raw ``<tool_call>`` markup.

:func:`wrap_decoder` puts a scanner in front of an adapter's decoder (the
OpenAI-compatible and Ollama adapters use it, where ``Capabilities.text_tool_calls``
or the run's ``text_tool_calls`` turns it on): text calls are released as
``ToolCallReady`` at the end of the reply, only if the reply had no native call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from ..messages import Message, ToolCall, new_id
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady
from .http.decoding import Decoder, DecoderWrapper

__all__ = ["TextCallDecoder", "TextCallScanner", "parse_calls", "quoted_texts", "wrap_decoder"]

_MARKERS = ("<tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "```", "<think>")
_START = re.compile(r"<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|```|<think>")
_LONGEST = max(len(m) for m in _MARKERS)
_TRIGGERS = ("<", "[", "`")
_END_TOKENS = re.compile(r"<\|(?:eom_id|eot_id|end|im_end)\|>|</s>")
_MISTRAL_NAMED = re.compile(r"\s*([A-Za-z_][\w.\-]*)(?:\[CALL_ID\]([\w\-]+))?\[ARGS\]")
_MARKED = ("<tool_call>", "<|python_tag|>", "[TOOL_CALLS]")
"""Openers that say "this is a call" (a fence or a bare object may be an example)."""
_SPACE = re.compile(r"\s+")


def _squeeze(text: str) -> str:
    return _SPACE.sub("", text)


def _held_tail(text: str) -> int:
    """Where a possible partial marker at the end of ``text`` starts (len(text) if none)."""
    start = max(0, len(text) - _LONGEST + 1)
    for index in range(start, len(text)):
        if text[index] in _TRIGGERS:
            tail = text[index:]
            if any(marker.startswith(tail) for marker in _MARKERS):
                return index
    return len(text)


class TextCallScanner:
    """Separates answer text, think blocks and text-format tool calls, chunk by chunk.

    Args:
        tool_names: the offered tools; empty: calls are never recognised (think
            blocks still are).
        quoted: texts the model may quote (the prompt, tool results): a block whose
            text appears in one of them is shown, never run. Read only when a block
            is found (most replies have none), so it may be a lazy iterable.
        forbidden: tools are forbidden (the forced final answer): marked call blocks
            are left out of the text and become no calls.
    """

    def __init__(
        self,
        tool_names: Collection[str],
        *,
        quoted: Iterable[str] = (),
        forbidden: bool = False,
    ) -> None:
        self.names = frozenset(tool_names)
        self.forbidden = forbidden
        self._quoted = quoted
        self._squeezed: list[str] | None = None  # the quoted texts without whitespace, once
        self.calls: list[ToolCall] = []
        self.thinking: list[str] = []
        self.call_text: list[str] = []
        """The raw text of the recognised blocks (shown after all if native calls came)."""
        self._mode = "text"
        self._buf = ""
        self._scan = 0  # where the search for a closing marker resumes in _buf
        self._opener = ""
        self._at_start = True  # only whitespace released so far
        self._space = ""  # whitespace held until text follows it
        self._pending: list[tuple[list[ToolCall], str]] = []  # call blocks, if nothing follows
        self._pending_space = ""  # whitespace after them
        self._after_think = False  # strip the whitespace that starts the answer
        self._dropped = False  # a call block was left out (tools forbidden)

    # -- feeding -------------------------------------------------------------------

    def feed(self, text: str) -> str:
        """The part of ``text`` (with what was held) that is plain answer text."""
        if (
            self._mode == "text"
            and not self._buf
            and not self._at_start
            and not self._pending
            and not self._after_think
        ):
            # The fast path: plain text without a marker character is released whole.
            if "<" not in text and "[" not in text and "`" not in text:
                return self._release(text)
        self._buf += text
        out: list[str] = []
        while self._step(out):
            pass
        return self._release("".join(out))

    def finish(self) -> str:
        """The rest at the end of the reply: held text, or an unclosed block decided."""
        buf, mode, self._buf = self._buf, self._mode, ""
        self._mode = "text"
        if mode == "think":
            self.thinking.append(buf)
            return self._release("", final=True)
        out: list[str] = []
        if mode in ("block", "tail", "fence"):  # unclosed (the server stopped at a stop token)
            whole = mode == "tail" or not self._prose_before(out)
            self._text(out, self._decide(self._opener, buf, "", position_ok=whole))
        elif mode == "fence_head":
            self._text(out, self._opener + buf)
        else:
            self._text(out, buf)
        for calls, raw in self._pending:  # nothing followed them: they are calls
            self.calls += calls
            self.call_text.append(raw)
        self._pending, self._pending_space = [], ""
        return self._release("".join(out), final=True)

    # -- the state machine -----------------------------------------------------------

    def _step(self, out: list[str]) -> bool:
        """One transition; False when the buffer needs more text."""
        buf = self._buf
        mode = self._mode
        if mode == "text":
            if self._at_start and any(not piece.isspace() for piece in out if piece):
                self._at_start = False  # text was released earlier in this feed
            if self._at_start and self.names:
                stripped = buf.lstrip()
                if not stripped:
                    return False
                if stripped[0] == "{":  # a bare JSON call is the whole reply (Llama 3)
                    self._mode, self._opener, self._buf = "tail", "", stripped
                    return False
            found = _START.search(buf)
            if found is None:
                cut = _held_tail(buf)
                self._text(out, buf[:cut])
                self._buf = buf[cut:]
                return False
            self._text(out, buf[: found.start()])
            marker = found.group()
            self._buf = buf[found.end() :]
            self._scan = 0
            self._opener = marker
            if marker == "<think>":
                self._mode = "think"
            elif marker == "```":
                self._mode = "fence_head"
            elif not self.names and not self.forbidden:
                self._text(out, marker)  # no tools offered: a marker is just text
            elif marker == "<tool_call>":
                self._mode = "block"
            else:
                self._mode = "tail"  # python_tag, TOOL_CALLS: the calls run to the end
            return True
        if mode == "think":
            end = buf.find("</think>")
            if end < 0:
                keep = max(0, len(buf) - len("</think>") + 1)
                self.thinking.append(buf[:keep])
                self._buf = buf[keep:]
                return False
            self.thinking.append(buf[:end])
            self._buf = buf[end + len("</think>") :]
            self._mode = "text"
            self._after_think = True
            return True
        if mode == "fence_head":
            newline = buf.find("\n")
            if newline < 0:
                if len(buf) > 20:  # not a language tag: an ordinary code block
                    self._text(out, self._opener)
                    self._mode = "code"
                    return True
                return False
            tag = buf[:newline].strip().lower()
            if tag in ("", "json") and self.names:
                self._opener = "```" + buf[: newline + 1]
                self._buf = buf[newline + 1 :]
                self._mode = "fence"
            else:  # a code block, or an example inside an explanation
                self._text(out, "```" + buf[: newline + 1])
                self._buf = buf[newline + 1 :]
                self._mode = "code"
            return True
        if mode == "code":  # inside a non-JSON code block: markers are plain text
            end = buf.find("```")
            if end < 0:
                cut = len(buf.rstrip("`"))
                self._text(out, buf[:cut])
                self._buf = buf[cut:]
                return False
            self._text(out, buf[: end + 3])
            self._buf = buf[end + 3 :]
            self._mode = "text"
            return True
        if mode in ("block", "fence"):
            closer = "</tool_call>" if mode == "block" else "```"
            end = buf.find(closer, self._scan)
            if end < 0:
                self._scan = max(0, len(buf) - len(closer) + 1)
                return False
            inner = buf[:end]
            self._buf = buf[end + len(closer) :]
            self._mode = "text"
            self._text(out, self._decide(self._opener, inner, closer))
            return True
        return False  # tail: everything up to the end belongs to the calls

    def _prose_before(self, out: list[str]) -> bool:
        """Whether answer text came before this point (released, held or pending)."""
        return not self._at_start or bool(self._pending) or any(piece.strip() for piece in out)

    def _decide(self, opener: str, inner: str, closer: str, *, position_ok: bool = True) -> str:
        """A call block held as pending (calls if nothing follows it), or its text."""
        raw = opener + inner + closer
        calls = parse_calls(opener, inner)
        if not calls:
            return raw
        marked = opener in _MARKED
        if self.forbidden:
            if not marked:
                return raw
            self._dropped = True  # tools are forbidden: the markup is not the answer
            return ""
        offered = all(call.name in self.names for call in calls)
        if not position_ok or not (marked or offered) or self._is_quoted(inner):
            return raw
        self._pending.append((calls, raw))
        return ""

    def _is_quoted(self, inner: str) -> bool:
        """Whether the block's text appears in the prompt or a tool result (a quotation)."""
        needle = _squeeze(_END_TOKENS.sub("", inner))
        if not needle:
            return False
        if self._squeezed is None:
            self._squeezed = [_squeeze(q) for q in self._quoted if q]
        return any(needle in hay for hay in self._squeezed)

    def _text(self, out: list[str], piece: str) -> None:
        """Append answer text; text after pending call blocks makes them quoted text."""
        if not piece:
            return
        if self._after_think:
            piece = piece.lstrip()  # the answer starts at its first character, however split
            if not piece:
                return
            self._after_think = False
        if self._pending:
            if not piece.strip():
                self._pending_space += piece
                return
            out.append("".join(raw for _calls, raw in self._pending) + self._pending_space)
            self._pending, self._pending_space = [], ""
        out.append(piece)

    def _release(self, text: str, *, final: bool = False) -> str:
        """Text to show; trailing whitespace is held until text follows (or the end).

        At the end it is dropped when calls were recognised (the blank lines around a
        call block are not an answer), so the text never depends on chunk boundaries.
        """
        body = text.rstrip()
        if body:
            self._at_start = False
            text, self._space = self._space + text[: len(body)], text[len(body) :]
        else:
            self._space += text
            text = ""
        if final:
            if not self.calls and not self._dropped:
                text += self._space
            self._space = ""
        return text


# --------------------------------------------------------------------------- parsing


def parse_calls(opener: str, inner: str) -> list[ToolCall] | None:
    """The calls in one block (``opener`` is the marker that began it), or None."""
    text = _END_TOKENS.sub("", inner).strip()
    if opener == "[TOOL_CALLS]" and text[:1] != "[":
        return _mistral_named(text)
    values = _json_values(text)
    if values is None:
        return None
    calls: list[ToolCall] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        for item in items:
            call = _call_from(item)
            if call is None:
                return None
            calls.append(call)
    return calls or None


def _json_values(text: str) -> list[Any] | None:
    """Consecutive JSON values separated by whitespace, ``;`` or ``,`` (None if not that)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    index = 0
    while True:
        while index < len(text) and text[index] in " \t\r\n;,":
            index += 1
        if index >= len(text):
            return values or None
        try:
            value, index = decoder.raw_decode(text, index)
        except ValueError:
            return None
        values.append(value)


def _call_from(item: Any) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    if isinstance(function, dict) and "name" in function:  # {"type":"function","function":{}}
        item = function
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None
    extra = set(item) - {"name", "arguments", "parameters", "type", "id"}
    if extra:
        return None  # some other JSON object that happens to have a "name"
    arguments = item.get("arguments", item.get("parameters", {}))
    return _tool_call(name, arguments, item.get("id"))


def _tool_call(name: str, arguments: Any, call_id: Any = None) -> ToolCall | None:
    raw: str
    if isinstance(arguments, str):
        raw = arguments
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = {}
        arguments = parsed
    else:
        raw = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, dict):
        return None
    ident = call_id if isinstance(call_id, str) and call_id else new_id("call_")
    return ToolCall(id=ident, name=name, arguments=arguments, raw_arguments=raw)


def _mistral_named(text: str) -> list[ToolCall] | None:
    """``name[ARGS]{...}`` (or ``name[CALL_ID]id[ARGS]{...}``), repeated."""
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    index = 0
    while index < len(text):
        if text.startswith("[TOOL_CALLS]", index):
            index += len("[TOOL_CALLS]")
            continue
        found = _MISTRAL_NAMED.match(text, index)
        if found is None:
            if text[index:].strip():
                return None
            break
        try:
            arguments, index = decoder.raw_decode(text, found.end())
        except ValueError:
            return None
        call = _tool_call(found.group(1), arguments, found.group(2))
        if call is None:
            return None
        calls.append(call)
    return calls or None


# --------------------------------------------------------------------------- decoder hook


class TextCallDecoder(DecoderWrapper):
    """An adapter's decoder with a :class:`TextCallScanner` on its text.

    Args:
        inner: the adapter's decoder.
        tool_names: the tools the request offered ("none" choice: pass none).
        quoted, forbidden: see :class:`TextCallScanner`.
        echo_key: the ``provider_data`` key under which the adapter echoes reasoning
            back with a call turn (Ollama's ``ollama_thinking``), or None.
    """

    def __init__(
        self,
        inner: Decoder,
        tool_names: Collection[str],
        echo_key: str | None,
        *,
        quoted: Iterable[str] = (),
        forbidden: bool = False,
    ) -> None:
        super().__init__(inner)
        self.scanner = TextCallScanner(tool_names, quoted=quoted, forbidden=forbidden)
        self.echo_key = echo_key
        self.native = False

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        """The inner decoder's events, with their text scanned."""
        return self._filter(self.inner.feed(chunk))

    def close(self) -> list[ProviderEvent]:
        """The last events: held text, text calls (if no native call) and Finished."""
        return self._filter(self.inner.close())

    def _filter(self, events: list[ProviderEvent]) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        for event in events:
            if type(event) is TextChunk:
                text = self.scanner.feed(event.text)
                if text:
                    out.append(TextChunk(text))
            elif isinstance(event, Finished):
                out += self._end(event)
            else:
                if isinstance(event, ToolCallReady):
                    self.native = True
                out.append(event)
        return out

    def _end(self, finished: Finished) -> list[ProviderEvent]:
        scanner = self.scanner
        rest = scanner.finish()
        out: list[ProviderEvent] = []
        if self.native and scanner.calls:  # native calls win: the text blocks were text
            rest = "".join(scanner.call_text) + rest
            scanner.calls = []
        if rest:
            out.append(TextChunk(rest))
        out += [ToolCallReady(call) for call in scanner.calls]
        thinking = "".join(scanner.thinking).strip()
        if thinking:
            data = dict(finished.provider_data or {})
            data["thinking"] = thinking
            if self.echo_key and (scanner.calls or self.native):
                data.setdefault(self.echo_key, thinking)
            finished = Finished(finished.stop_reason, data)
        out.append(finished)
        return out


def wrap_decoder(
    inner: Decoder,
    request: ModelRequest,
    echo_key: str | None = None,
    *,
    default: bool = False,
) -> Decoder:
    """``inner`` behind a text-call scanner, when text calls are recognised for ``request``.

    Args:
        inner: the adapter's decoder.
        request: the request (its ``text_tool_calls``: None means ``default``).
        echo_key: see :class:`TextCallDecoder`.
        default: the adapter's declaration (``Capabilities.text_tool_calls``): True
            for servers that may return calls as text, False for APIs that call natively.
    """
    wanted = request.text_tool_calls
    if not (default if wanted is None else wanted):
        return inner
    forbidden = request.tool_choice == "none"
    names = [] if forbidden else [t.name for t in request.tools]
    # Gathered only if a block turns up: walking the whole history on every request
    # made each request's cost grow with the conversation.
    quoted = _iter_quoted(request.messages)
    return TextCallDecoder(inner, names, echo_key, quoted=quoted, forbidden=forbidden)


def quoted_texts(messages: Iterable[Message]) -> list[str]:
    """What the model may quote: the user turns and every tool result."""
    return list(_iter_quoted(messages))


def _iter_quoted(messages: Iterable[Message]) -> Iterator[str]:
    for message in messages:
        if message.role == "user":
            yield message.content
        for rnd in message.rounds or ():
            for result in rnd.results:
                yield result.content
