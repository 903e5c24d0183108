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
    assert [t.name for t in tools.tools] == ["x", "y"] and type(tools.tools) is tuple
    p = flow.blocks[0].statements[0]
    assert text[p.description.span.start:p.description.span.end] == '"A"'


def _run_in_subprocess(code, env_extra):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": str(src), **env_extra}
    env.pop("TURNFLOW_NO_CACHE", None)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


_LIBRARY = "import turnflow; print(len(turnflow.parse('workflow w { participant a; participant b }').blocks))"
_CLI = ("import sys; from turnflow.cli.app import main; sys.stdout.write('2\\n' if main(['check', '-q', sys.argv[1]]) == 0 "
        "else 'failed\\n')")


def _cli_check(tmp_path, env_extra):
    flow = tmp_path / "ok.flow"
    flow.write_text('workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    b -> terminate "done"\n}\n')
    return _run_in_subprocess(_CLI.replace("sys.argv[1]", repr(str(flow))), env_extra)


def test_a_library_parse_writes_no_parser_table_cache(tmp_path):
    done = _run_in_subprocess(_LIBRARY, {"XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr
    assert not (tmp_path / "turnflow").exists()


def test_the_cli_caches_parser_tables_per_user_and_a_bad_cache_is_ignored(tmp_path):
    cache = tmp_path / "cache"
    first = _cli_check(tmp_path, {"XDG_CACHE_HOME": str(cache)})
    assert first.returncode == 0 and first.stdout.strip() == "2", first.stderr
    cached = list((cache / "turnflow").glob("flow-lalr-*.pickle"))
    assert len(cached) == 1
    cached[0].write_bytes(b"not a pickle at all")  # corrupted: rebuilt, not trusted
    again = _cli_check(tmp_path, {"XDG_CACHE_HOME": str(cache)})
    assert again.returncode == 0 and again.stdout.strip() == "2" and again.stderr == ""
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")  # the cache directory cannot be created: no cache, no error
    third = _cli_check(tmp_path, {"XDG_CACHE_HOME": str(blocked)})
    assert third.returncode == 0 and third.stdout.strip() == "2" and third.stderr == ""


def test_turnflow_no_cache_keeps_the_cli_from_caching(tmp_path):
    cache = tmp_path / "cache"
    done = _cli_check(tmp_path, {"XDG_CACHE_HOME": str(cache), "TURNFLOW_NO_CACHE": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "2", done.stderr
    assert not list(cache.glob("turnflow/*.pickle"))


def test_gc_pausing_is_a_cli_switch_not_a_library_one(monkeypatch, tmp_path):
    import gc

    import turnflow
    from turnflow import cli, process

    monkeypatch.setattr(process, "PAUSE_GC", False)
    monkeypatch.setattr(process, "TABLE_CACHE", False)
    monkeypatch.setenv("TURNFLOW_NO_CACHE", "1")
    calls = []
    real_disable = gc.disable
    monkeypatch.setattr(gc, "disable", lambda: (calls.append(1), real_disable()))
    text = 'workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    b -> terminate "done"\n}\n'
    try:
        assert turnflow.check(text) == []
        turnflow.parse(text)
        assert calls == [], "a library parse paused the garbage collector"
        flow = tmp_path / "ok.flow"
        flow.write_text(text)
        assert cli.main(["check", "-q", str(flow)]) == 0
        assert process.PAUSE_GC is True and calls, "the CLI did not pause the collector while parsing"
    finally:
        gc.enable()
