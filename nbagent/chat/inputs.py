"""What goes into a chat message besides its text: fields, mentions and attached images.

``{name}`` fields and ``@name`` mentions are read from the kernel's namespace as
``%%agent`` reads fields (:func:`interpolate`). Pasted or dropped images, and figures
attached by name, wait in :class:`Attachments` until the next message, which sends
them as the prompt's image parts (stored with the conversation, as prompt images are).
"""

from __future__ import annotations

import keyword
from typing import Any

from .._internal.images import Image, to_image
from ..kernel import current_view
from ..kernel.errors import last_error_text
from ..kernel.prompt import Interpolated, PromptError, interpolate_prompt
from ..messages import Conversation
from .cards import is_table
from .figures import thumbnail
from .mentions import expand_mentions

MAX_IMAGE_BYTES = 10 * 1024 * 1024
"""Largest pasted or dropped image accepted (the page refuses bigger ones first)."""
MAX_ATTACHMENTS = 8
"""Images one message may carry."""


def interpolate(text: str) -> Interpolated | str:
    """``{name}`` fields and ``@name`` mentions from the kernel (an error text if undefined)."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if shell is None:
        return Interpolated(text)
    text = expand_mentions(text, current_view(shell))  # @name goes as {name} does
    if "{" not in text:
        return Interpolated(text)
    try:
        return interpolate_prompt(
            text, shell.user_ns, last_error=lambda: last_error_text(current_view(shell))
        )
    except PromptError as exc:
        return str(exc)


class Attachments:
    """Images waiting for the next message, in the order they were added."""

    def __init__(self) -> None:
        self.images: list[Image] = []
        self._shown: list[dict[str, str]] = []  # each image's chip: label and thumbnail

    def add(self, data: bytes) -> Image:
        """Add a PNG or JPEG image (downscaled as prompt images are).

        Raises:
            ValueError: too large, too many, or not a PNG/JPEG image (the message says which).
        """
        if len(data) > MAX_IMAGE_BYTES:
            raise ValueError(f"image not attached: {len(data):,} bytes is over {MAX_IMAGE_BYTES:,}")
        self._check_room()
        try:
            image = to_image(data)
        except (TypeError, ValueError) as error:
            raise ValueError(f"image not attached: {error}") from None
        return self.add_image(image)

    def add_image(self, image: Image, name: str = "") -> Image:
        """Add an image made in the kernel (a figure); ``name`` is the variable it came from.

        Raises:
            ValueError: the message already carries :data:`MAX_ATTACHMENTS` images.
        """
        self._check_room()
        label = f"{image.format} {image.width}×{image.height}"
        self.images.append(image)
        self._shown.append(
            {"label": f"{name} · {label}" if name else label, "thumb": thumbnail(image)}
        )
        return image

    def _check_room(self) -> None:
        if len(self.images) >= MAX_ATTACHMENTS:
            raise ValueError(f"image not attached: a message carries {MAX_ATTACHMENTS} at most")

    def remove(self, index: int) -> None:
        """Drop the image at ``index`` (its × in the page); an unknown index does nothing."""
        if 0 <= index < len(self.images):
            del self.images[index]
            del self._shown[index]

    def take(self) -> list[Image]:
        """The images, leaving none (they go with the message being sent)."""
        images, self.images, self._shown = self.images, [], []
        return images

    def state(self) -> list[dict[str, Any]]:
        """What the page shows per image: ``{"label", "thumb"}``.

        The label is e.g. ``PNG 640×480`` (``fig · PNG 640×480`` for a figure attached
        by name); the thumbnail a small ``data:`` URL ("" when it cannot be made).
        """
        return [dict(shown) for shown in self._shown]


def find_value(conversation: Conversation, call_id: str) -> Any:
    """The DataFrame tool call ``call_id`` returned in this session.

    Raises:
        ValueError: no such call, or its value is not a DataFrame held in memory.
    """
    for message in reversed(conversation.messages):
        for tool_round in message.rounds or []:
            for result in tool_round.results:
                if result.call_id == call_id:
                    if not is_table(result.value):
                        raise ValueError(f"call {call_id} has no DataFrame in this session")
                    return result.value
    raise ValueError(f"no call {call_id} in this conversation")


def assign(name: str, value: Any) -> None:
    """Set the notebook variable ``name`` (a plain identifier, not a keyword)."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a valid variable name")
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise ValueError("no notebook kernel to put the variable in")
    shell.user_ns[name] = value
