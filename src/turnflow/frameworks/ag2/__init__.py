"""AG2: the classic GroupChat (AG2 0.9) and its group patterns, and AG2 1.2.1, whose
TransitionGraph is the format of turnflow's own compiled knobs (`turnflow.spec`). `turnflow serve`
speaks AG2 1.2.1's hub protocol; that server is a transport of the runtime and lives in `turnflow/serve/`.

- `check_builtin.py`: TF301: a rule that needs turnflow's extension conditions (profile `ag2-builtin`);
- `check_groupchat.py`: TF303: what `writer_groupchat.py`'s `TABLE` marks inexact, refused at the construct;
- `history.py`: the transcript as AG2's events (`AG2History`);
- `interop.py`: `turnflow.interop.ag2` (its public path): the extensions an AG2 1.2.1 process registers to load turnflow's knobs;
- `participant.py`: `kind: ag2`: an `ag2.Agent` (1.2.1) takes the turn;
- `reader_groupchat.py`: `migrate --from classic`: an AutoGen 0.2 / AG2 0.9 `GroupChat` in Python, read with `ast`, never run;
- `reader_groupchat_rotation.py`: a classic chat's agents in order, and "every agent but these" as a view;
- `reader_groupchat_tools.py`: a classic chat's tools and who runs them (`func_call_filter` as `handoff CALLER -> EXECUTOR via TOOL`);
- `reader_patterns.py`: `migrate --from ag2-patterns`: group patterns (`DefaultPattern`, handoffs, ...) in Python;
- `writer_builtin.py`: `compile --profile ag2-builtin`: the TransitionGraph in AG2 1.2.1's built-in conditions alone;
- `writer_groupchat.py`: `compile --target ag2-groupchat`: a classic GroupChat module, and its construct `TABLE`.
"""
