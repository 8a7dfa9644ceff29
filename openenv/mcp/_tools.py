"""An env's action model as MCP tools, and its observations as tool results.

One tool per action: a plain action model gives one tool; a tagged union (a
``RootModel`` or ``Annotated`` union with a ``Literal`` tag field) gives one tool per
member, named by its tag. The tag and the ``metadata`` field are not in the tool's
input schema: the bridge fills the tag in. An action class may set
``mcp_tool_name`` and ``mcp_tool_description`` (``ClassVar[str]``) to choose its tool's
name and description; the default description is its docstring.
"""

from __future__ import annotations

import base64
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

import mcp_types as mt
import orjson
from pydantic import BaseModel, RootModel, TypeAdapter, ValidationError

from .._exceptions import UnknownTool as UnknownTool  # re-exported: its home before the one tree
from .._exceptions import ValidationFailed

#: Fields every ``Action`` has that an agent does not fill in.
_HIDDEN_FIELDS = ("metadata",)
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its MCP description and how to build the action from its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]
    tag_field: str | None = None
    tag_value: Any = None

    def to_mcp(self, extra_properties: dict[str, Any] | None = None) -> mt.Tool:
        schema = self.input_schema
        if extra_properties:
            schema = {**schema, "properties": {**schema.get("properties", {}), **extra_properties}}
        return mt.Tool(name=self.name, description=self.description, input_schema=schema)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _doc(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    if doc and cls.__doc__ not in (BaseModel.__doc__, RootModel.__doc__):
        return doc.split("\n\n")[0].replace("\n", " ")
    return ""


def _union_members(model: Any) -> tuple[list[type[BaseModel]], str | None]:
    """The members of a tagged-union action model and its discriminator (if declared)."""
    tp: Any = model
    discriminator: str | None = None
    if isinstance(model, type) and issubclass(model, RootModel):
        field = model.model_fields["root"]
        tp = field.annotation
        discriminator = field.discriminator if isinstance(field.discriminator, str) else None
    if get_origin(tp) is typing.Annotated:
        tp, *meta = get_args(tp)
        for m in meta:
            d = getattr(m, "discriminator", None)
            if isinstance(d, str):
                discriminator = d
    if get_origin(tp) in (typing.Union, types.UnionType):
        members = [m for m in get_args(tp) if isinstance(m, type) and issubclass(m, BaseModel)]
        return members, discriminator
    return [], None


def _tag_of(member: type[BaseModel], discriminator: str | None) -> tuple[str, Any]:
    names = [discriminator] if discriminator else list(member.model_fields)
    for name in names:
        field = member.model_fields.get(name)
        if field is not None and get_origin(field.annotation) is Literal:
            values = get_args(field.annotation)
            if len(values) == 1:
                return name, values[0]
    raise TypeError(f"union action member {member.__name__} has no Literal tag field")


def _input_schema(model: type[BaseModel], drop: tuple[str, ...]) -> dict[str, Any]:
    schema = model.model_json_schema()
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in drop}
    out: dict[str, Any] = {"type": "object", "properties": props}
    required = [r for r in schema.get("required", []) if r not in drop]
    if required:
        out["required"] = required
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    if schema.get("additionalProperties") is False:
        out["additionalProperties"] = False
    return out


class ActionTools:
    """The tools of one env class; builds actions from tool calls."""

    def __init__(self, action_model: Any, *, default_name: str) -> None:
        self.action_model = action_model
        self._adapter: TypeAdapter[Any] = TypeAdapter(action_model)
        members, discriminator = _union_members(action_model)
        specs: list[ToolSpec] = []
        if members:
            for member in members:
                tag_field, tag_value = _tag_of(member, discriminator)
                name = getattr(member, "mcp_tool_name", None) or (
                    tag_value if isinstance(tag_value, str) else _snake(member.__name__)
                )
                specs.append(self._spec(member, name, (tag_field, *_HIDDEN_FIELDS), tag_field, tag_value))
        else:
            cls = action_model
            stem = _snake(cls.__name__.removesuffix("Action")) if cls.__name__ != "Action" else ""
            name = getattr(cls, "mcp_tool_name", None) or stem or default_name
            specs.append(self._spec(cls, name, _HIDDEN_FIELDS, None, None))
        self.specs = {s.name: s for s in specs}
        if len(self.specs) != len(specs):
            raise TypeError(f"two actions of {action_model!r} map to the same MCP tool name")

    @staticmethod
    def _spec(
        model: type[BaseModel], name: str, drop: tuple[str, ...], tag_field: str | None, tag_value: Any
    ) -> ToolSpec:
        description = getattr(model, "mcp_tool_description", None) or _doc(model) or name
        return ToolSpec(name, description, _input_schema(model, drop), tag_field, tag_value)

    def build(self, name: str, arguments: dict[str, Any] | None) -> Any:
        """The action for a call of tool ``name``; ``UnknownTool`` or ``ValidationFailed``."""
        spec = self.specs.get(name)
        if spec is None:
            raise UnknownTool(f"Unknown tool: {name!r} (tools: {', '.join(self.specs)})")
        data = dict(arguments or {})
        if spec.tag_field is not None:
            data[spec.tag_field] = spec.tag_value
        try:
            return self._adapter.validate_python(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False, include_input=False)
            detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in errors)
            raise ValidationFailed(f"invalid arguments for tool {name!r}: {detail}") from None


def _image_mime(value: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if value.startswith(magic):
            return mime
    if value[:4] == b"RIFF" and value[8:12] == b"WEBP":
        return "image/webp"
    return None


def observation_result(obs: BaseModel, extra: dict[str, Any] | None = None) -> mt.CallToolResult:
    """A tool result: the observation as structured content and JSON text; images
    (``bytes`` fields holding PNG, JPEG, GIF or WebP) as image content."""
    structured: dict[str, Any] = obs.model_dump(mode="json")
    images: list[mt.ImageContent] = []
    for name in type(obs).model_fields:
        value = getattr(obs, name)
        if isinstance(value, bytes) and (mime := _image_mime(value)):
            images.append(mt.ImageContent(data=base64.b64encode(value).decode(), mime_type=mime))
            structured[name] = f"<{mime} image: content[{len(images)}]>"
    if extra:
        structured.update(extra)
    text = mt.TextContent(text=orjson.dumps(structured).decode())
    return mt.CallToolResult(content=[text, *images], structured_content=structured, is_error=False)


def error_result(message: str) -> mt.CallToolResult:
    """A tool call that failed inside the env or on bad arguments (``isError``)."""
    return mt.CallToolResult(content=[mt.TextContent(text=message)], is_error=True)
