"""`turnflow.interop.ag2`: AG2 1.2.1 interop under the path users import (docs/compiler.md,
"Running compiled knobs on AG2"). It lives in `turnflow/frameworks/ag2/interop.py`, with the rest of
what turnflow knows about AG2; this module re-exports it.

    from turnflow.interop.ag2 import register_extensions
    register_extensions()          # once per process, before any graph is loaded
"""

from turnflow.frameworks.ag2.interop import (EXTENSIONS, AllOf, AnyOf, ContextCompare, Not, PreviousSpeaker,
                                             TextContains, bind_agents, extensions_needed, register_extensions)

__all__ = ["EXTENSIONS", "AllOf", "AnyOf", "ContextCompare", "Not", "PreviousSpeaker", "TextContains",
           "bind_agents", "extensions_needed", "register_extensions"]
