"""A small valid instance of a JSON Schema: the action ``validate`` sends when none is given.

Covers what pydantic emits: objects with ``required`` properties, ``$ref``/``$defs``,
``anyOf``/``oneOf`` (tagged unions: the first branch), ``const``, ``enum``, defaults,
string/number/array bounds. Optional properties are left out, so the env's defaults
apply.
"""

from __future__ import annotations

from typing import Any

_MAX_DEPTH = 12


def sample_instance(schema: dict[str, Any]) -> Any:
    """A value that ``schema`` accepts, or raise ``ValueError`` where none can be made."""
    return _sample(schema, schema, 0)


def sample_filled(schema: dict[str, Any]) -> Any:
    """``sample_instance`` plus a value for every optional top-level field (not ``metadata``).

    For envs whose validators ask for more than their schema says is required.
    """
    value = sample_instance(schema)
    node = _resolve(schema, schema)
    if not isinstance(value, dict):
        return value
    for name, prop in node.get("properties", {}).items():
        if name not in value and name != "metadata" and isinstance(prop, dict):
            value[name] = _sample(schema, {k: v for k, v in prop.items() if k != "default"}, 1)
    return value


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < _MAX_DEPTH:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise ValueError(f"cannot follow $ref {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _sample(root: dict[str, Any], node: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("schema nests too deeply to sample")
    if node is True or node == {}:
        return None
    if not isinstance(node, dict):
        raise ValueError(f"not a schema: {node!r}")
    node = _resolve(root, node)
    if "const" in node:
        return node["const"]
    if "default" in node:
        return node["default"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("oneOf", "anyOf"):
        if node.get(key):
            branches = [_resolve(root, b) for b in node[key]]
            # Prefer a non-null branch: a null for an Optional field says little.
            branches.sort(key=lambda b: b.get("type") == "null")
            return _sample(root, branches[0], depth + 1)
    if node.get("allOf"):
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            merged.update(_resolve(root, part))
        return _sample(root, merged, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None and "properties" in node:
        kind = "object"
    return _by_type(root, node, kind, depth)


def _by_type(root: dict[str, Any], node: dict[str, Any], kind: Any, depth: int) -> Any:
    if kind == "object":
        props = node.get("properties", {})
        required = set(node.get("required", []))
        # Tags (a const, even with a default) always go along: a tagged union needs them.
        tags = {name for name, p in props.items() if isinstance(p, dict) and "const" in _resolve(root, p)}
        return {
            name: _sample(root, props.get(name, {}), depth + 1)
            for name in [*node.get("required", []), *sorted(tags - required)]
        }
    if kind == "array":
        count = int(node.get("minItems", 0))
        if "prefixItems" in node:
            return [_sample(root, item, depth + 1) for item in node["prefixItems"]]
        return [_sample(root, node.get("items", {}), depth + 1) for _ in range(count)]
    if kind == "string":
        text = "hello"
        low, high = int(node.get("minLength", 0)), node.get("maxLength")
        text = text.ljust(low, "x")
        return text[: int(high)] if high is not None else text
    if kind in ("integer", "number"):
        return _number(node, kind)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    raise ValueError(f"cannot sample a value of type {kind!r}")


def _number(node: dict[str, Any], kind: str) -> int | float:
    low = node.get("minimum", node.get("exclusiveMinimum"))
    value: float = 0 if low is None else low
    if "exclusiveMinimum" in node and value <= node["exclusiveMinimum"]:
        value = node["exclusiveMinimum"] + 1
    high = node.get("maximum", node.get("exclusiveMaximum"))
    if high is not None and value > high:
        value = high
    return int(value) if kind == "integer" else float(value)
