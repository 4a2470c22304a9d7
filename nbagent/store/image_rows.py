"""Images in the history: a prompt's attachments and a tool result's figures, saved and read back.

A resumed conversation must expand its images in later requests exactly as the
live one did, so the encoded bytes (already downscaled for the model, see
:mod:`nbagent._internal.images`) are stored with their media type and size. Size is
bounded: an image over :data:`MAX_IMAGE_BYTES`, the images of one prompt or
result past :data:`MAX_IMAGES_PER_ITEM`, and anything once a conversation holds
:data:`MAX_CONVERSATION_BYTES` of images keep only their row (type and size):
they load back as a line of text saying the image was not kept.

Like :mod:`.rows`, these functions run inside a transaction the caller opened.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from .._internal.images import Image

MAX_IMAGE_BYTES = 5 << 20
"""Largest image stored with its bytes (5 MiB, the per-image limit of the strictest API)."""
MAX_IMAGES_PER_ITEM = 32
"""Images stored with their bytes for one prompt or one tool result."""
MAX_CONVERSATION_BYTES = 64 << 20
"""Image bytes one conversation keeps; later images are stored as their size only."""

_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def insert_images(
    db: sqlite3.Connection,
    conversation_id: str,
    images: Iterable[Image],
    *,
    message_row: int | None = None,
    tool_call_row: int | None = None,
) -> None:
    """Save the images of one prompt (``message_row``) or one tool result (``tool_call_row``)."""
    pictures = list(images)
    if not pictures:
        return
    room = MAX_CONVERSATION_BYTES - stored_bytes(db, conversation_id)
    for position, image in enumerate(pictures):
        keep = (
            len(image.data) <= MAX_IMAGE_BYTES
            and position < MAX_IMAGES_PER_ITEM
            and len(image.data) <= room
        )
        if keep:
            room -= len(image.data)
        db.execute(
            """
            INSERT INTO images (message_id, tool_call_id, position, media_type, width, height,
              data)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            (
                message_row,
                tool_call_row,
                position,
                image.media_type,
                image.width,
                image.height,
                sqlite3.Binary(image.data) if keep else None,
            ),
        )


def stored_bytes(db: sqlite3.Connection, conversation_id: str) -> int:
    """Bytes of image data a conversation holds."""
    row = db.execute(
        """
        SELECT coalesce((SELECT sum(length(i.data)) FROM images i
                         JOIN messages m ON i.message_id = m.id
                         WHERE m.conversation_id = ?), 0)
             + coalesce((SELECT sum(length(i.data)) FROM images i
                         JOIN tool_calls t ON i.tool_call_id = t.id
                         JOIN rounds r ON t.round_id = r.id
                         JOIN messages m ON r.message_id = m.id
                         WHERE m.conversation_id = ?), 0)
        """,
        (conversation_id, conversation_id),
    ).fetchone()
    return int(row[0])


class LoadedImages:
    """A conversation's stored images, by the row they belong to."""

    def __init__(self) -> None:
        self.by_message: dict[int, list[Image | str]] = {}
        self.by_tool_call: dict[int, list[Image | str]] = {}

    def of_message(self, row: int) -> tuple[list[Image], list[str]]:
        """The images of a prompt, and a note for each one not kept."""
        return _split(self.by_message.get(row, []))

    def of_tool_call(self, row: int) -> tuple[list[Image], list[str]]:
        """The images of a tool call's result, and a note for each one not kept."""
        return _split(self.by_tool_call.get(row, []))


def load_images(db: sqlite3.Connection, conversation_id: str) -> LoadedImages:
    """Every stored image of a conversation (bytes over the size limit are not read)."""
    loaded = LoadedImages()
    columns = "i.position, i.media_type, i.width, i.height, "
    columns += f"CASE WHEN length(i.data) <= {MAX_IMAGE_BYTES} THEN i.data END"
    for row in db.execute(
        f"""
        SELECT i.message_id, {columns} FROM images i JOIN messages m ON i.message_id = m.id
        WHERE m.conversation_id = ? ORDER BY i.message_id, i.position
        """,
        (conversation_id,),
    ):
        loaded.by_message.setdefault(row[0], []).append(_image(*row[1:]))
    for row in db.execute(
        f"""
        SELECT i.tool_call_id, {columns} FROM images i
          JOIN tool_calls t ON i.tool_call_id = t.id JOIN rounds r ON t.round_id = r.id
          JOIN messages m ON r.message_id = m.id
        WHERE m.conversation_id = ? ORDER BY i.tool_call_id, i.position
        """,
        (conversation_id,),
    ):
        loaded.by_tool_call.setdefault(row[0], []).append(_image(*row[1:]))
    return loaded


def _image(
    position: int, media_type: str, width: int, height: int, data: bytes | None
) -> Image | str:
    """The stored image, or the note that stands for one whose bytes were not kept."""
    if data is not None and media_type in _MEDIA_TYPES and width > 0 and height > 0:
        return Image(bytes(data), media_type, int(width), int(height))
    kind = media_type.removeprefix("image/").upper()
    return (
        f"[image {position + 1} ({width}×{height} {kind}) was not kept in the history "
        "(over its size limit); the model saw it in the original run]"
    )


def _split(items: list[Image | str]) -> tuple[list[Image], list[str]]:
    return [i for i in items if isinstance(i, Image)], [i for i in items if isinstance(i, str)]
