"""numpy values on the wire: nested lists in JSON, raw bytes in msgpack.

A pydantic field typed ``WireValue`` holds any gym value (arrays, numpy scalars,
tuples, dicts). Dumped in ``json`` mode (JSON frames, HTTP) arrays become nested
lists; dumped in ``python`` mode (the server's msgpack frames) an array becomes
``{"__ndarray__": <bytes>, "dtype": "float32", "shape": [4]}``, which msgpack sends as
binary. Validation turns that form back into an array; lists stay lists (the space
gives them their dtype, see ``from_wire``).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import BeforeValidator, PlainSerializer, SerializationInfo

ND_KEY = "__ndarray__"


def to_wire(value: Any, binary: bool) -> Any:
    """A gym value as JSON-able data (``binary``: arrays as bytes for msgpack)."""
    if isinstance(value, np.ndarray):
        if binary and value.dtype.kind in "biuf":
            arr = np.ascontiguousarray(value)
            return {ND_KEY: arr.tobytes(), "dtype": arr.dtype.str, "shape": list(arr.shape)}
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): to_wire(v, binary) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(v, binary) for v in value]
    return value


def decode_arrays(value: Any) -> Any:
    """Turn the msgpack array form back into arrays, anywhere in ``value``."""
    if isinstance(value, dict):
        if ND_KEY in value and isinstance(value[ND_KEY], bytes | bytearray):
            arr = np.frombuffer(value[ND_KEY], dtype=np.dtype(value["dtype"]))
            return arr.reshape(value["shape"]).copy()
        return {k: decode_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_arrays(v) for v in value]
    return value


def _serialize(value: Any, info: SerializationInfo) -> Any:
    return to_wire(value, binary=info.mode == "python")


WireValue = Annotated[
    Any,
    BeforeValidator(decode_arrays),
    PlainSerializer(_serialize, when_used="always"),
]
