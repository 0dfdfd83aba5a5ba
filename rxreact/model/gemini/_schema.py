"""A tool's JSON schema → the schema subset Gemini's ``FunctionDeclaration.parameters`` takes.

Gemini reads an OpenAPI-style ``Schema``: ``type`` (upper case), ``format``, ``description``,
``nullable``, ``enum``, ``properties``, ``required``, ``items``, ``anyOf``, the min/max
bounds, ``pattern``, ``default``, ``title``, ``propertyOrdering``. Here:

- local ``$ref`` s (pydantic's ``#/$defs/...``) are inlined; a recursive one is refused;
- ``"type": ["string", "null"]`` and an ``anyOf`` with a ``{"type": "null"}`` become
  ``nullable``; ``const`` becomes a one-value ``enum``; ``oneOf`` is read as ``anyOf``; an
  ``allOf`` of one schema is that schema;
- keys with no meaning for Gemini (``$schema``, ``additionalProperties``, ``examples``...)
  are dropped, which loosens nothing the model is told;
- anything else (``not``, ``prefixItems``, ``patternProperties``, a multi-schema ``allOf``,
  an unknown ``type``) is an :class:`~rxreact.errors.InvalidArgumentError` naming the tool
  and where in its schema, before any request is sent.
"""

from __future__ import annotations

from typing import Any

from rxreact.errors import InvalidArgumentError

__all__ = ["SCHEMA_FIELDS", "gemini_schema"]

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
SCHEMA_FIELDS = (
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "default",
    "minimum",
    "maximum",
    "propertyOrdering",
)
"""The fields of Gemini's ``Schema`` kept as they are (besides type, properties, items...)."""
_DROPPED = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "$comment",
        "additionalProperties",
        "examples",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "readOnly",
        "writeOnly",
        "deprecated",
        "discriminator",
        "contentMediaType",
        "contentEncoding",
    }
)
_REFUSED = ("not", "prefixItems", "patternProperties", "if", "then", "else", "dependentSchemas")


def gemini_schema(schema: dict[str, Any], tool: str) -> dict[str, Any]:
    """``schema`` (a tool's ``parameters``) as Gemini takes it (rules: the module doc).

    Raises:
        InvalidArgumentError: a part of the schema Gemini cannot take, naming ``tool``.
    """
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    return _Converter(tool, defs).convert(schema, "parameters", ())


class _Converter:
    __slots__ = ("_defs", "_tool")

    def __init__(self, tool: str, defs: dict[str, Any]) -> None:
        self._tool = tool
        self._defs = defs

    def _refuse(self, where: str, what: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"tool {self._tool!r}: Gemini cannot take {what} (at {where} of its schema)"
        )

    def convert(self, node: Any, where: str, seen: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(node, dict):
            raise self._refuse(where, f"a schema that is not an object ({node!r})")
        ref = node.get("$ref")
        if ref is not None:
            name = str(ref).rsplit("/", 1)[-1]
            if not str(ref).startswith("#/") or name not in self._defs:
                raise self._refuse(where, f"the reference {ref!r}")
            if name in seen:
                raise self._refuse(where, f"a recursive schema ({name!r} refers to itself)")
            inlined = {**self._defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
            return self.convert(inlined, where, (*seen, name))
        for key in _REFUSED:
            if key in node:
                raise self._refuse(where, f"{key!r}")
        node = self._flatten(node, where)
        if "anyOf" in node:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return self._any_of(node["anyOf"], rest, where, seen)
        kind = node.get("type")
        if isinstance(kind, list):
            rest = {k: v for k, v in node.items() if k not in ("type", "description", "title")}
            alternatives = [{**rest, "type": k} for k in kind]
            return self._any_of(alternatives, node, where, seen)
        unknown = set(node) - _DROPPED - set(SCHEMA_FIELDS) - {"type", "const", "properties"}
        unknown -= {"required", "items"}
        if unknown:
            raise self._refuse(where, f"{sorted(unknown)[0]!r}")
        out: dict[str, Any] = {}
        if kind is not None:
            if kind not in _TYPES:
                raise self._refuse(where, f"the type {kind!r}")
            out["type"] = str(kind).upper()
        for key in SCHEMA_FIELDS:
            if key in node:
                out[key] = node[key]
        if "const" in node:
            out["enum"] = [node["const"]]
        if "enum" in out:
            out.setdefault("type", "STRING")
            out["enum"] = [str(v) for v in out["enum"]]  # Gemini's enums are strings
        if "properties" in node:
            out["properties"] = {
                name: self.convert(sub, f"{where}.properties.{name}", seen)
                for name, sub in node["properties"].items()
            }
        if "required" in node:
            out["required"] = list(node["required"])
        if "items" in node:
            out["items"] = self.convert(node["items"], f"{where}.items", seen)
        return out

    def _flatten(self, node: dict[str, Any], where: str) -> dict[str, Any]:
        if "oneOf" in node:
            node = {**{k: v for k, v in node.items() if k != "oneOf"}, "anyOf": node["oneOf"]}
        if "allOf" in node:
            parts = node["allOf"]
            if not isinstance(parts, list) or len(parts) != 1:
                raise self._refuse(where, "an 'allOf' of several schemas")
            rest = {k: v for k, v in node.items() if k != "allOf"}
            node = {**parts[0], **rest} if "$ref" not in parts[0] else {**rest, **parts[0]}
        return node

    def _any_of(
        self, alternatives: Any, node: dict[str, Any], where: str, seen: tuple[str, ...]
    ) -> dict[str, Any]:
        """An ``anyOf`` (or a list of types): ``null`` alternatives become ``nullable``, and
        one alternative left is that schema, with the outer description and default."""
        if not isinstance(alternatives, list) or not alternatives:
            raise self._refuse(where, "an empty 'anyOf'")
        outer: dict[str, Any] = {
            k: node[k] for k in ("description", "title", "default") if k in node
        }
        real = [a for a in alternatives if not (isinstance(a, dict) and a.get("type") == "null")]
        if len(real) < len(alternatives):
            outer["nullable"] = True
        if not real:
            return {"type": "NULL", **outer}
        options = [self.convert(a, f"{where}.anyOf[{i}]", seen) for i, a in enumerate(real)]
        if len(options) == 1:
            return {**options[0], **outer}
        return {"anyOf": options, **outer}
