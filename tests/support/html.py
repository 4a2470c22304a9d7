"""An HTML inspector for rendering tests: what a browser would build, and
the check that a rendering is inert (no script, handler, unsafe URL or comment)."""

from __future__ import annotations

from html.parser import HTMLParser


class HtmlFacts(HTMLParser):
    """What a browser would build from an HTML string: elements, attributes, comments."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.comments: list[str] = []
        self.text_parts: list[str] = []
        self._in_style = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_data(self, data: str) -> None:
        if not self._in_style:  # visible text only
            self.text_parts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def find(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def assert_inert(html_text: str) -> HtmlFacts:
    """No script element, no event-handler attribute, no unsafe URL, no comment."""
    facts = HtmlFacts(html_text)
    names = [t for t, _ in facts.tags]
    assert "script" not in names and "iframe" not in names and "object" not in names
    for tag, attrs in facts.tags:
        for key, value in attrs.items():
            assert not key.startswith("on"), (tag, key, value)
            if key in ("href", "src", "action", "formaction", "xlink:href"):
                url = "".join(ch for ch in (value or "") if ch > " ").lower()
                assert not url.startswith(("javascript:", "vbscript:")), (tag, key, value)
                if url.startswith("data:"):
                    # only the PNGs we encode ourselves
                    assert tag == "img" and url.startswith("data:image/png;base64,"), value
    assert facts.comments == []
    return facts
