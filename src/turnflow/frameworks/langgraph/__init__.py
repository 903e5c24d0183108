"""LangGraph (with LangChain's messages). No reader of LangGraph code: a module `writer.py`
produced is read back by `turnflow.migrate.compiled`, the reader of every module built on
`compiler/emit/pyroute.py`'s routers (AutoGen's `writer_python.py` too).

- `check.py`: TF302: what `writer.py`'s `TABLE` marks inexact, refused at the construct;
- `history.py`: the transcript as LangChain messages (`LangChainHistory`);
- `participant.py`: `kind: langgraph`: a compiled graph takes the turn;
- `writer.py`: `compile --target langgraph`: a standalone `StateGraph` module, and its construct `TABLE`.
"""
