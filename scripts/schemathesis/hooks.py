"""Schemathesis hooks for Sluice's OpenAPI file: generators for the two custom formats, so that data the schema
calls valid is what the server really accepts (an image's bytes cannot be described by a JSON Schema)."""
import base64
import struct
import zlib

import schemathesis
from hypothesis import strategies as st


def png(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour (8-bit RGB)."""
    row = b"\x00" + bytes(colour) * width

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b"")


images = st.builds(png, st.integers(1, 48), st.integers(1, 48), st.tuples(*(st.integers(0, 255),) * 3))

# `sluice-image`: an upload body; `sluice-image-base64`: the caption API's imageData.
schemathesis.openapi.format("sluice-image", images)
schemathesis.openapi.format("sluice-image-base64", images.map(lambda data: base64.b64encode(data).decode("ascii")))



@schemathesis.hook
def before_call(context, case, kwargs):
    """A valid caption request declares the type its image really is (the server checks the magic bytes)."""
    meta = getattr(case, "meta", None)
    positive = meta is not None and meta.generation.mode.is_positive
    body = case.body
    if positive and case.operation.path == "/api/generateCaption" and isinstance(body, dict):
        data = body.get("imageData")
        if isinstance(data, str):
            try:
                if base64.b64decode(data, validate=True).startswith(b"\x89PNG"):
                    body["mimeType"] = "image/png"
            except ValueError:
                pass
