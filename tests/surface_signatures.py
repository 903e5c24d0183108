"""Print the parameters of framework objects as `inspect.signature` sees them, one JSON object
{target: [[kind, name, required], ...] or error} — run by tests/test_migrate_surface.py in-process
(autogen-agentchat) and under the classic AG2 environment (`python tests/surface_signatures.py T ...`)."""

from __future__ import annotations

import importlib
import inspect
import json
import sys

KINDS = {inspect.Parameter.POSITIONAL_ONLY: "/", inspect.Parameter.POSITIONAL_OR_KEYWORD: "p",
         inspect.Parameter.KEYWORD_ONLY: "k", inspect.Parameter.VAR_POSITIONAL: "*",
         inspect.Parameter.VAR_KEYWORD: "**"}


def signature(target: str) -> list:
    module, _, qual = target.partition(":")
    obj = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    # a class with its own `__init__` binds through it (pydantic models that define one take
    # `(agent, **data)`, not the field list `inspect.signature(cls)` synthesises)
    own = inspect.isclass(obj) and "__init__" in vars(obj)
    sig = inspect.signature(obj.__init__ if own else obj)
    return [[KINDS[p.kind], p.name, p.default is inspect.Parameter.empty and p.kind not in (
        inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
        for p in sig.parameters.values() if p.name not in ("self", "cls")]


def signatures(targets: list[str]) -> dict:
    out: dict = {}
    for t in targets:
        try:
            out[t] = signature(t)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            out[t] = f"{type(exc).__name__}: {exc}"
    return out


if __name__ == "__main__":
    print(json.dumps(signatures(sys.argv[1:])))
