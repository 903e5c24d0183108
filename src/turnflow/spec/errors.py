"""`SpecError` (a JSON path and a reason) and the translation of pydantic's
validation errors into it: the first error, at the JSON path of the offending
value in the input (`$.knobs.graph.transitions[2].then.args.agent_id`), in
words that name what was expected."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Union

from pydantic import ValidationError
from pydantic_core import ErrorDetails

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MISSING = object()

#: the discriminator key of each tagged union, and what its members are called
TAGS = {"name": "transition {}", "kind": "session kind"}


class SpecError(ValueError):
    """An invalid spec, knobs or graph; `.path` is a JSON path (`$` is the
    document root), `.reason` the message without the path."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def json_path(parts: Iterable[Union[str, int]], root: str = "$") -> str:
    """`$`, `.key`, `[index]`; keys that are not identifiers as `["a b"]`."""
    out = root
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.match(p):
            out += f".{p}"
        else:
            out += "[" + json.dumps(p, ensure_ascii=False) + "]"
    return out


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _walk(loc: tuple[Union[str, int], ...], data: Any) -> tuple[list[Union[str, int]], Any]:
    """The JSON path parts of pydantic's `loc` in `data` (dropping the tags
    pydantic inserts for a tagged union's member) and the value found there."""
    parts: list[Union[str, int]] = []
    cur = data
    for part in loc:
        if isinstance(cur, dict):
            if part in cur:
                parts.append(part)
                cur = cur[part]
                continue
            if any(cur.get(tag) == part for tag in TAGS):
                continue  # the member a tagged union chose
            parts.append(part)
            cur = _MISSING
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            parts.append(part)
            cur = cur[part]
        elif cur is _MISSING or isinstance(part, int) or not isinstance(cur, (dict, list)):
            if isinstance(part, str) and not isinstance(cur, dict) and cur is not _MISSING:
                continue  # a validator's own label (e.g. `function-after[...]`)
            parts.append(part)
            cur = _MISSING
    return parts, cur


#: pydantic's error kinds for a value of the wrong JSON type → what was expected
_EXPECTED_TYPE = {"model_type": "an object", "dict_type": "an object", "model_attributes_type": "an object",
                  "list_type": "a list", "string_type": "a string", "int_type": "an integer",
                  "float_type": "a number", "number_type": "a number"}


def _reason(err: ErrorDetails, value: Any, parts: list[Union[str, int]]) -> tuple[list[Union[str, int]], str]:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "missing":
        return parts[:-1], f"{parts[-1]!r} is a required property"
    if kind == "extra_forbidden":
        return parts[:-1], f"{parts[-1]!r} is not allowed here (unknown key)"
    if kind == "union_tag_invalid":
        tag = ctx.get("discriminator", "").strip("'")
        what = TAGS.get(tag, "{}").format("condition" if parts and parts[-1] == "when" or
                                          (len(parts) > 1 and parts[-2] == "conditions") else "target")
        known = ctx.get("expected_tags", "")
        return parts + [tag], f"no {what} named {ctx.get('tag')!r} (known: {known.replace(chr(39), '')})"
    if kind == "union_tag_not_found":
        tag = ctx.get("discriminator", "").strip("'")
        return parts, f"{tag!r} is a required property"
    if kind in _EXPECTED_TYPE:
        return parts, f"must be {_EXPECTED_TYPE[kind]}, got {_show(value)}"
    if kind == "literal_error":
        return parts, f"{_show(value)} is not one of {ctx.get('expected', '')}"
    if kind == "string_too_short":
        return parts, "must not be empty"
    if kind == "too_short":
        return parts, f"{_show(value)} is too short (at least {ctx.get('min_length')} items)"
    if kind == "too_long":
        return parts, f"{_show(value)} is too long (at most {ctx.get('max_length')} items)"
    if kind == "greater_than_equal":
        return parts, f"{_show(value)} is less than the minimum of {ctx.get('ge')}"
    if kind == "greater_than":
        return parts, f"{_show(value)} is not greater than {ctx.get('gt')}"
    msg = err["msg"]
    return parts, msg[len("Value error, "):] if msg.startswith("Value error, ") else msg


def from_validation_error(exc: ValidationError, data: Any, root: str = "$") -> SpecError:
    """The first of pydantic's errors as a `SpecError` at its JSON path in `data`."""
    err = exc.errors(include_url=False)[0]
    parts, value = _walk(tuple(err["loc"]), data)
    parts, reason = _reason(err, value, parts)
    return SpecError(json_path(parts, root), reason)
