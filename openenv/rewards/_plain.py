"""Plain values across a process boundary, and exact equality on this side of it.

A grader that lets graded code produce the objects it compares can be lied to: an
object whose ``__eq__`` returns True passes ``assert f(x) == expected``. The rule
(docs/sandbox.md, "Graders the graded code cannot reach") is that only plain data
crosses from the graded process: ``encode`` turns a value into a flat list of JSON
scalars, ``decode`` builds it back out of builtin types only, and ``exact_equal``
compares with exact types (``True`` is not ``1``, ``(1,)`` is not ``[1]``).

Plain types: ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, and ``list``,
``tuple``, ``dict``, ``set``, ``frozenset`` of plain values, by exact type (a subclass
is not plain). Anything else is passed to ``opaque``, which returns an integer
handle (or raises ``TypeError``). The encoding is flat (``["L", 2, "I", "1", ...]``),
so nesting depth costs no recursion on either side.

This module is standard library only: graders also run its source inside sandboxes.
"""

import base64
from collections.abc import Callable
from typing import Any

_CONTAINERS: dict[type[Any], str] = {list: "L", tuple: "U", dict: "D", set: "E", frozenset: "Z"}


def encode(value: Any, opaque: Callable[[Any], int] | None = None) -> list[Any]:
    """``value`` as a flat list of JSON scalars (see the module docstring)."""
    out: list[Any] = []
    todo: list[Any] = [value]
    while todo:
        x = todo.pop()
        t = type(x)
        if x is None:
            out.append("N")
        elif t is bool:
            out.append("T" if x else "F")
        elif t is int:
            out += ["I", str(x)]
        elif t is float:
            out += ["R", float.hex(x)]
        elif t is str:
            out += ["S", x]
        elif t is bytes:
            out += ["Y", base64.b64encode(x).decode("ascii")]
        elif t in _CONTAINERS:
            out += [_CONTAINERS[t], len(x)]
            items = [v for kv in x.items() for v in kv] if t is dict else list(x)
            todo.extend(reversed(items))
        elif opaque is not None:
            out += ["H", opaque(x)]
        else:
            raise TypeError(f"not a plain value: {t.__name__}")
    return out


#: Tuples and frozensets nest at most this deep in a decoded value: hashing one is a
#: C recursion with no guard (a million levels crash the interpreter).
MAX_HASHABLE_DEPTH = 100
#: At most this many members of one decoded set, frozenset or dict share one hash:
#: more are a value built to make building it quadratic (ints ``k * (2**61 - 1)``).
MAX_SHARED_HASH = 32

_SCALARS: dict[str, Callable[[Any], Any]] = {
    "I": int,
    "R": float.fromhex,
    "S": str,
    "Y": lambda s: base64.b64decode(s, validate=True),
}


def decode(tokens: Any, handle: Callable[[int], Any] | None = None) -> Any:
    """The value ``tokens`` encodes, built of builtin types only (handles through
    ``handle``). ``ValueError`` when ``tokens`` is not one well-formed value."""
    if not isinstance(tokens, list):
        raise ValueError("an encoded value is a list")
    it = iter(tokens)
    # Each open container: [kind, items still to read, items read, tuple depth].
    stack: list[list[Any]] = []
    root: list[Any] = []
    try:
        for tag in it:
            if tag == "N":
                value: Any = None
            elif tag in ("T", "F"):
                value = tag == "T"
            elif tag in _SCALARS:
                raw = next(it)
                if type(raw) is not str:
                    raise ValueError(f"bad payload for {tag!r}")
                value = _SCALARS[tag](raw)
            elif tag == "H":
                raw = next(it)
                if handle is None or type(raw) is not int:
                    raise ValueError("an opaque handle where none is allowed")
                value = handle(raw)
            elif tag in ("L", "U", "D", "E", "Z"):
                n = next(it)
                if type(n) is not int or n < 0 or n > len(tokens):
                    raise ValueError("bad container length")
                depth = (stack[-1][3] if stack else 0) + (tag in ("U", "Z"))
                if depth > MAX_HASHABLE_DEPTH:
                    raise ValueError(f"tuples nested more than {MAX_HASHABLE_DEPTH} deep")
                stack.append([tag, n * 2 if tag == "D" else n, [], depth])
                if n:
                    continue
                value = _build(stack.pop())
            else:
                raise ValueError(f"unknown tag {tag!r}")
            while True:  # hand the value to its container, closing the full ones
                if not stack:
                    root.append(value)
                    break
                frame = stack[-1]
                frame[2].append(value)
                if len(frame[2]) < frame[1]:
                    break
                value = _build(stack.pop())
            if root:
                break
        if not root or stack or next(it, None) is not None:
            raise ValueError("not exactly one value")
    except (StopIteration, TypeError, OverflowError) as exc:
        raise ValueError(f"malformed value: {exc}") from None
    return root[0]


def _build(frame: list[Any]) -> Any:
    tag, _n, items, _depth = frame
    if tag == "L":
        return items
    if tag == "U":
        return tuple(items)
    _check_hashes(items[::2] if tag == "D" else items)
    if tag == "D":
        return dict(zip(items[::2], items[1::2], strict=True))
    return set(items) if tag == "E" else frozenset(items)


def _check_hashes(keys: list[Any]) -> None:
    """``ValueError`` when more than ``MAX_SHARED_HASH`` of ``keys`` share one hash
    (a Python loop: a thread running it lets the others run)."""
    if len(keys) <= MAX_SHARED_HASH:
        return
    seen: dict[int, int] = {}
    for key in keys:
        h = hash(key)
        seen[h] = n = seen.get(h, 0) + 1
        if n > MAX_SHARED_HASH:
            raise ValueError(f"more than {MAX_SHARED_HASH} members share one hash")


def exact_equal(a: Any, b: Any) -> bool:
    """``a == b`` with exact types at every level: ``type(x) is type(y)`` and equal
    values, recursively through containers (dict keys and set members included).
    Anything other than a plain value is equal only to itself."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        t = type(x)
        if t is not type(y):
            return False
        if t in (list, tuple):
            if len(x) != len(y):
                return False
            todo.extend(zip(x, y, strict=True))
        elif t in (dict, set, frozenset):
            if len(x) != len(y):
                return False
            stored = {k: k for k in y}  # y's own key objects (1 and True hash alike)
            for k in x:
                if k not in stored:
                    return False
                todo.append((k, stored[k]))
                if t is dict:
                    todo.append((x[k], y[k]))
        elif t in (type(None), bool, int, float, str, bytes):
            if x != y:
                return False
        elif x is not y:
            return False
    return True
