"""AutoGen AgentChat 0.7 (teams: `RoundRobinGroupChat`, `SelectorGroupChat`, `Swarm`,
`GraphFlow`; agents: `AssistantAgent` and any `BaseChatAgent`).

- `check.py`: TF304: what `writer_python.py`'s `TABLE` marks inexact, refused at the construct;
- `check_json.py`: TF305: a flow no AgentChat team component decides exactly, refused where it breaks the shape;
- `history.py`: the transcript as AgentChat messages (`AutoGenHistory`);
- `participant.py`: `kind: autogen`: an AgentChat agent takes the turn; a `HandoffMessage` routes;
- `reader_json.py`: `migrate --from autogen` of team component JSON (`dump_component()`, Studio and gallery files);
- `reader_python.py`: `migrate --from autogen` of teams written in Python, read into the component structure `reader_json.py` reads;
- `writer_json.py`: `compile --target autogen-json`: a team component (`RoundRobinGroupChat`, `Swarm`, `GraphFlow`) where one decides as the hub does;
- `writer_python.py`: `compile --target autogen`: a `SelectorGroupChat` module, and its construct `TABLE`.
"""
