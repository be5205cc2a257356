"""The sandbox's channel: how a frame is written and read, on both sides of the pipe.

A frame is a 4-byte big-endian header length, a JSON header (a dict with its
``event``), a 4-byte blob length and the blob (a check's result: ``.npz`` bytes or
a traced program as JSON). The reader trusts nothing: an oversized or malformed
frame ends the stream with ``{"event": "garbled"}``.
"""
from __future__ import annotations

import json

MAX_FRAME = 128 << 20       # the most one frame's blob may carry (a capstone's weights)
MAX_HEADER = 1 << 16


def encode(event: str, blob: bytes = b"", **fields) -> bytes:
    """One frame: header length, JSON header, blob length, blob."""
    header = json.dumps({"event": event, **fields}).encode()
    return len(header).to_bytes(4, "big") + header + len(blob).to_bytes(4, "big") + blob


def read_frames(stream, max_total: int):
    """The frames of a stream (see :func:`encode`) as dicts with their ``blob``; a
    malformed or oversized stream, or one over ``max_total`` bytes in all, ends with
    ``{"event": "garbled"}``."""
    total = 0
    while True:
        size = stream.read(4)
        if len(size) < 4:
            return
        n = int.from_bytes(size, "big")
        total += n
        try:
            if n > MAX_HEADER or total > max_total:
                raise ValueError
            header = json.loads(stream.read(n))
            m = int.from_bytes(stream.read(4), "big")
            total += m
            if m > MAX_FRAME or total > max_total or not isinstance(header, dict):
                raise ValueError
            header["blob"] = stream.read(m)
        except ValueError:
            yield {"event": "garbled"}
            return
        yield header
