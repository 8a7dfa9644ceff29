"""Gymnasium spaces <-> JSON Schema, and wire values <-> space values.

``space_schema(space)`` writes a JSON Schema for a space plus an exact description
under ``"x-gym-space"``; ``schema_space(schema)`` reads one back: the exact form when
present (envs served by ``openenv.gym``), otherwise a space derived from the plain
schema of any env's models (integers with bounds -> ``Discrete``, numbers and
fixed-size numeric arrays -> ``Box``, strings -> ``AnyText``, objects -> ``Dict``).
Fields that no space describes are left out (``schema_space`` reports them).
"""

from __future__ import annotations

import string
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ._arrays import ND_KEY, decode_arrays

EXT = "x-gym-space"
#: Observation/action fields of the base models that are not part of a space.
BASE_FIELDS = frozenset({"metadata", "done", "reward", "truncated"})
_PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "


#: The longest string ``AnyText.sample`` makes: a schema's ``maxLength`` (a million for
#: the coding env's code) bounds what is valid, not what a random probe should send.
SAMPLE_MAX_LENGTH = 4096
#: ``maxLength`` of a string field whose schema gives none: any length is valid.
UNBOUNDED_LENGTH = 2**31 - 1
#: Bound of an integer field whose schema gives none: 2**53, the largest integer
#: JSON numbers hold exactly (and +-2**53 leaves room for numpy to sample the range).
JSON_INT = 2**53


class AnyText(spaces.Text):
    """A ``Text`` space that contains any string within its length bounds (samples
    printable ASCII, at most ``SAMPLE_MAX_LENGTH`` characters)."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_PRINTABLE, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is None and probability is None:
            top = max(self.min_length, min(self.max_length, SAMPLE_MAX_LENGTH))
            mask = (int(self.np_random.integers(self.min_length, top + 1)), None)
        return super().sample(mask=mask, probability=probability)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and (self.min_length, self.max_length) == (
            other.min_length,
            other.max_length,
        )

    __hash__ = None  # type: ignore[assignment]


class Boolean(spaces.Discrete):
    """``Discrete(2)`` for a JSON ``boolean`` field: ``json_booleans`` sends its values
    as ``false``/``true`` (a strict model refuses ``0``/``1``)."""

    def __init__(self, seed: Any = None) -> None:
        super().__init__(2, seed=seed)


def json_booleans(value: Any, space: gymnasium.Space[Any]) -> Any:
    """``value`` with the values of the ``Boolean`` spaces in it as Python bools."""
    if isinstance(space, Boolean):
        return bool(value)
    if isinstance(space, spaces.Dict) and isinstance(value, dict):
        return {k: json_booleans(v, space.spaces[k]) if k in space.spaces else v for k, v in value.items()}
    return value


class TaggedUnion(spaces.OneOf):  # type: ignore[type-arg]
    """A tagged-union action (``oneOf`` members told apart by a ``const`` field such as
    ``type``): a sample is ``(i, fields)``, sent as ``{tag_key: tags[i], **fields}``."""

    def __init__(self, tag_key: str, members: dict[str, spaces.Dict], seed: Any = None) -> None:
        super().__init__(list(members.values()), seed=seed)
        self.tag_key = tag_key
        self.tags = list(members)

    def wire(self, value: Any) -> dict[str, Any]:
        index, fields = value
        return {self.tag_key: self.tags[int(index)], **json_booleans(fields, self.spaces[int(index)])}


# --- space -> schema ------------------------------------------------------------------


def _bounds(values: np.ndarray) -> list[Any]:
    flat = values.astype(float).ravel()
    return [None if not np.isfinite(v) else (int(v) if float(v).is_integer() else float(v)) for v in flat]


def describe(space: gymnasium.Space[Any]) -> dict[str, Any]:
    """The exact, JSON-able description of a space."""
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": space.dtype.str,
            "low": _bounds(space.low),
            "high": _bounds(space.high),
        }
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": space.dtype.str,
        }
    if isinstance(space, spaces.MultiBinary):
        n: Any = space.n
        return {"type": "MultiBinary", "n": int(n) if np.ndim(n) == 0 else [int(v) for v in n]}
    if isinstance(space, spaces.Text):
        return {"type": "Text", "min_length": space.min_length, "max_length": space.max_length}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: describe(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [describe(s) for s in space.spaces]}
    raise TypeError(f"no wire form for {type(space).__name__} spaces")


def rebuild(desc: dict[str, Any]) -> gymnasium.Space[Any]:
    """The space a ``describe`` output describes."""
    kind = desc["type"]
    if kind == "Discrete":
        return spaces.Discrete(desc["n"], start=desc.get("start", 0))
    if kind == "Box":
        shape, dtype = tuple(desc["shape"]), np.dtype(desc["dtype"])
        low = np.array([-np.inf if v is None else v for v in desc["low"]], dtype=float).reshape(shape)
        high = np.array([np.inf if v is None else v for v in desc["high"]], dtype=float).reshape(shape)
        return spaces.Box(low.astype(dtype), high.astype(dtype), shape=shape, dtype=dtype)
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(desc["nvec"], dtype=np.dtype(desc["dtype"]), start=desc.get("start"))
    if kind == "MultiBinary":
        return spaces.MultiBinary(desc["n"])
    if kind == "Text":
        return AnyText(desc["max_length"], min_length=desc.get("min_length", 0))
    if kind == "Dict":
        return spaces.Dict({k: rebuild(v) for k, v in desc["spaces"].items()})
    if kind == "Tuple":
        return spaces.Tuple([rebuild(v) for v in desc["spaces"]])
    raise ValueError(f"unknown space type {kind!r}")


def space_schema(space: gymnasium.Space[Any]) -> dict[str, Any]:
    """A JSON Schema for values of ``space``, with the exact space under ``x-gym-space``."""
    return {**_plain_schema(space), EXT: describe(space)}


def _plain_schema(space: gymnasium.Space[Any]) -> dict[str, Any]:
    if isinstance(space, spaces.Discrete):
        return {"type": "integer", "minimum": int(space.start), "maximum": int(space.start + space.n - 1)}
    if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        item: dict[str, Any] = {"type": "integer" if space.dtype.kind in "biu" else "number"}
        if isinstance(space, spaces.Box) and space.is_bounded("both") and space.shape:
            item.update(minimum=float(space.low.min()), maximum=float(space.high.max()))
        schema = item
        for dim in reversed(space.shape or ()):
            schema = {"type": "array", "items": schema, "minItems": dim, "maxItems": dim}
        return schema
    if isinstance(space, spaces.Text):
        return {"type": "string", "minLength": space.min_length, "maxLength": space.max_length}
    if isinstance(space, spaces.Dict):
        props = {k: _plain_schema(s) for k, s in space.spaces.items()}
        return {"type": "object", "properties": props, "required": list(props)}
    if isinstance(space, spaces.Tuple):
        items = [_plain_schema(s) for s in space.spaces]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    return {}


# --- schema -> space ------------------------------------------------------------------


def schema_space(
    schema: dict[str, Any], *, skip: frozenset[str] = BASE_FIELDS
) -> tuple[gymnasium.Space[Any] | None, list[str]]:
    """The space a JSON Schema describes, and the object fields it had to leave out."""
    defs = schema.get("$defs", {})
    left_out: list[str] = []

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        return resolve(defs[ref.rsplit("/", 1)[-1]]) if isinstance(ref, str) else node

    def convert(node: dict[str, Any], path: str) -> gymnasium.Space[Any] | None:
        node = resolve(node)
        if EXT in node:
            return rebuild(node[EXT])
        kind = node.get("type")
        if kind == "integer":
            lo, hi = node.get("minimum"), node.get("maximum")
            if lo is not None and hi is not None:
                return spaces.Discrete(int(hi) - int(lo) + 1, start=int(lo))
            # unbounded: the integers JSON carries exactly (and a range numpy can sample)
            return spaces.Box(-JSON_INT if lo is None else lo, JSON_INT if hi is None else hi, (), np.int64)
        if kind == "number":  # finite bounds: JSON carries no infinities
            info64 = np.finfo(np.float64)
            lo, hi = node.get("minimum", info64.min), node.get("maximum", info64.max)
            return spaces.Box(float(lo), float(hi), (), np.float64)
        if kind == "boolean":
            return Boolean()
        if kind == "string":
            if "enum" in node or "const" in node:
                return None  # a closed set of strings: no space describes it here
            length = int(node.get("maxLength", UNBOUNDED_LENGTH))
            return AnyText(length, min_length=int(node.get("minLength", 0)))
        if kind == "array":
            return _array(node, resolve)
        if kind == "object" and "properties" in node:
            out: dict[str, gymnasium.Space[Any]] = {}
            for key, sub in node["properties"].items():
                if not path and key in skip:
                    continue
                space = convert(sub, f"{path}{key}.")
                if space is None:
                    left_out.append(f"{path}{key}")
                else:
                    out[key] = space
            return spaces.Dict(out)
        if not path and ("oneOf" in node or "anyOf" in node):
            return _tagged_union([resolve(m) for m in node.get("oneOf") or node["anyOf"]], convert)
        return None

    return convert(schema, ""), left_out


def _tagged_union(members: list[dict[str, Any]], convert: Any) -> TaggedUnion | None:
    """The members of a tagged union whose required fields all have a space."""
    tag_keys = {k for m in members for k, v in m.get("properties", {}).items() if "const" in v}
    if len(tag_keys) != 1:
        return None
    (tag_key,) = tag_keys
    usable: dict[str, spaces.Dict] = {}
    for member in members:
        props = member.get("properties", {})
        if tag_key not in props or "const" not in props[tag_key]:
            return None
        body = {**member, "properties": {k: v for k, v in props.items() if k != tag_key}}
        space = convert(body, "")
        required = set(member.get("required", ())) - {tag_key}
        if isinstance(space, spaces.Dict) and required <= set(space.spaces):
            usable[str(props[tag_key]["const"])] = space
    return TaggedUnion(tag_key, usable) if usable else None


def _array(node: dict[str, Any], resolve: Any) -> gymnasium.Space[Any] | None:
    shape: list[int] = []
    while node.get("type") == "array":
        n = node.get("minItems")
        if n is None or n != node.get("maxItems") or "items" not in node:
            return None
        shape.append(int(n))
        node = resolve(node["items"])
    if node.get("type") not in ("integer", "number"):
        return None
    dtype = np.int64 if node["type"] == "integer" else np.float64
    lo = node.get("minimum", -JSON_INT if dtype is np.int64 else np.finfo(np.float64).min)
    hi = node.get("maximum", JSON_INT if dtype is np.int64 else np.finfo(np.float64).max)
    return spaces.Box(lo, hi, tuple(shape), dtype)


# --- values ---------------------------------------------------------------------------


def from_wire(value: Any, space: gymnasium.Space[Any]) -> Any:
    """A wire value (lists, msgpack arrays, plain JSON) as a value of ``space``."""
    if isinstance(space, spaces.Box) and isinstance(value, dict) and ND_KEY in value:  # fast path
        arr = np.frombuffer(value[ND_KEY], dtype=np.dtype(value["dtype"])).reshape(value["shape"])
        return arr.astype(space.dtype, copy=True)
    value = decode_arrays(value)
    if isinstance(space, spaces.Discrete):
        return np.int64(value)
    if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        return np.asarray(value, dtype=space.dtype).reshape(space.shape)
    if isinstance(space, spaces.Text):
        return str(value)
    if isinstance(space, spaces.Dict):
        return {k: from_wire(value[k], s) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(from_wire(v, s) for v, s in zip(value, space.spaces, strict=True))
    return value
