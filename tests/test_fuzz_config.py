"""Issue #25's fuzz property over configuration files: generated `turnflow.toml` and
`pyproject.toml` `[tool.turnflow]` tables (known keys with values of every type, unknown keys,
deep nesting, huge strings, broken TOML, bytes that are not UTF-8) make `turnflow check` exit 0,
1 or 2, never 3 and never a traceback; an exit 2 names the file and the key (or the line) at
fault in a message of bounded length. Bounded: a few seconds (TF_FUZZ_EXAMPLES=400 searches longer)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from turnflow.cli import main
from turnflow.workspace.config import KEYS

FLOW = (Path(__file__).resolve().parents[1] / "examples" / "support.flow").read_text()
KNOWN = sorted(KEYS)
HUGE = "x" * 200_000

scalars = st.one_of(st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=8), st.sampled_from(["TF203", "TF2", "ALL", "error", "warning", "[z-a]",
                                                          "*a" * 20 + "*b", "[ab", "a\\", "**/x", "", HUGE]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(KNOWN) | st.text(max_size=5), inner, max_size=3),
                      max_leaves=8)


def _key(k: str) -> str:
    return json.dumps(k)  # a TOML basic string is a JSON string (for what json.dumps writes)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value > 0 else "-inf") if value in (float("inf"), -float("inf")) \
            else repr(value)
    if isinstance(value, int):
        return str(value)  # out of 64 bits: TOML says no, tomllib accepts; either is fine here
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"


@st.composite
def tables(draw) -> dict:
    keys = draw(st.lists(st.sampled_from(KNOWN) | st.text(min_size=1, max_size=6), max_size=4, unique=True))
    return {k: draw(values) for k in keys}


@st.composite
def documents(draw) -> tuple[str, bytes]:
    """(file name, bytes) of a configuration."""
    table = draw(tables())
    body = "\n".join(f"{_key(k)} = {_toml(v)}" for k, v in table.items()) + "\n"
    name = draw(st.sampled_from(["turnflow.toml", "pyproject.toml"]))
    if name == "pyproject.toml":
        body = "[project]\nname = \"x\"\n[tool.turnflow]\n" + body
    data = body.encode("utf-8")
    damage = draw(st.sampled_from(["none", "none", "cut", "insert", "deep", "bytes"]))
    if damage == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif damage == "insert":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"[", b"]", b"{", b"=", b"\"", b"\n", b"'''", b"[[", b".",
                                                 b"[tool]\n", b"tool = 1\n", b"\x00"])) + data[at:]
    elif damage == "deep":
        depth = draw(st.sampled_from([50, 400, 3000]))
        data += b"extend-select = " + b"[" * depth + b"]" * depth + b"\n"
    elif damage == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xfe\xff" + data[at:]
    return name, data


FUZZ = settings(max_examples=int(os.environ.get("TF_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _check_run(tmp_path_factory, capsys, name: str, data: bytes, explicit: bool) -> None:
    folder = tmp_path_factory.mktemp("cfg")
    (folder / name).write_bytes(data)
    flow = folder / "a.flow"
    flow.write_text(FLOW)
    argv = ["check", str(flow)] + (["--config", str(folder / name)] if explicit else [])
    code = main(argv)
    captured = capsys.readouterr()
    assert code in (0, 1, 2), captured.err
    assert "internal error" not in captured.err and "Traceback" not in captured.err, captured.err
    if code == 2:
        assert name in captured.err, captured.err  # the file at fault
        where = ("`", "line ", "end of document", "nested too deeply")  # the key, or the position
        assert any(w in captured.err for w in where), captured.err
    assert len(captured.err) < 2000, f"{len(captured.err)} characters of message"


@FUZZ
@given(doc=documents(), explicit=st.booleans())
@example(doc=("pyproject.toml", b"tool = 1\n"), explicit=True)
@example(doc=("pyproject.toml", b"[tool]\nturnflow = 1\n"), explicit=True)
@example(doc=("turnflow.toml", ("select = [\"" + HUGE + "\"]\n").encode()), explicit=False)
@example(doc=("turnflow.toml", ("severity = {TF203 = \"" + HUGE + "\"}\n").encode()), explicit=False)
@example(doc=("turnflow.toml", ("exclude = [\"[" + HUGE + "\"]\n").encode()), explicit=False)
@example(doc=("turnflow.toml", ("\"" + HUGE + "\" = 1\n").encode()), explicit=False)
@example(doc=("turnflow.toml", b"extend-select = " + b"[" * 3000 + b"]" * 3000 + b"\n"), explicit=False)
@example(doc=("turnflow.toml", b"per-file-ignores = {\"a\" = 1}\n"), explicit=False)
@example(doc=("turnflow.toml", b"severity = {TF203 = []}\n"), explicit=False)
@example(doc=("turnflow.toml", b"exclude = [\"a\\\\\"]\n"), explicit=False)
def test_any_configuration_is_exit_0_1_or_2_naming_the_key(tmp_path_factory, capsys, doc, explicit):
    _check_run(tmp_path_factory, capsys, doc[0], doc[1], explicit)


FINDING = "workflow w {\n    participant a\n    participant b\n    start a\n    a -> zzz\n}\n"  # TF102


def test_a_path_glob_naming_a_hidden_folder_keeps_its_dot(tmp_path, capsys, monkeypatch):
    """`lstrip("./")` took `.gen/a.flow` for `gen/a.flow`: neither `exclude` nor
    `per-file-ignores` applied to a hidden folder named with its dot."""
    (tmp_path / ".gen").mkdir()
    (tmp_path / ".gen" / "a.flow").write_text(FINDING)
    (tmp_path / "b.flow").write_text(FLOW)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "turnflow.toml").write_text('exclude = [".gen/a.flow"]\n')
    assert main(["check", "."]) == 0 and "(1 file)" in capsys.readouterr().out
    (tmp_path / "turnflow.toml").write_text('exclude = []\nper-file-ignores = { "./.gen/*.flow" = ["TF102"] }\n')
    assert main(["check", "."]) == 0 and "(2 files)" in capsys.readouterr().out
