"""The docs tell users the truth: what they name that a user could type or rely on is checked
against the code, data-driven, so a flag renamed, a default changed or a key added without its
documentation fails here with the document and line.

- every `--flag` the docs name is a flag of some `turnflow` command (or is listed in FOREIGN:
  ruff's, pytest's, a bench script's), and a flag written after its command (`run --lease`,
  `turnflow check ... --select`, a `--help` example) is that command's;
- every option of every command is documented somewhere (README.md or docs/*.md);
- every default stated in a `--help` line, in docs/serve.md's options table and in
  docs/configuration.md's key table is the one the code uses; the configuration keys documented
  are the ones the loader reads, no more, no fewer;
- every environment variable the docs name is read by turnflow (or its tests), and every
  `TURNFLOW_*` variable the code reads is documented;
- the JSON fields the docs list (`check --format json`, `run --format json`, `run --tasks --format
  json`, `inspect --format json`, `graph --format json`) are the ones written;
- the agents file's keys (docs/agents.md §5) are the ones the loader accepts, and the documented
  signatures of the model agents carry the code's defaults;
- the example outputs of README.md and docs/agents.md are what the command prints;
- docs/cli.md's rules hold for every argument: a named value refuses '' by name, every number
  flag is in its "Numbers and durations" list, the alternatives a synopsis gives a flag
  (`--format text|json`) are its choices;
- the extras the docs install are pyproject.toml's, and docs/serve.md's list of the examples that
  need no AG2 extension is what they compile to.

README.md and docs/*.md are read, but docs/benchmarks.md (figures, bench scripts' own flags) and the
generated docs/targets.md."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from turnflow.cli import main
from turnflow.cli.app import build_parser

ROOT = Path(__file__).resolve().parents[1]
ALL_DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")
                                 if p.name not in ("benchmarks.md", "targets.md"))]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# a flag the user docs name that is no turnflow option: (the documents it may appear in, why)
FOREIGN = {
    **{f: (("docs/cli.md",), "ruff's, in the table of ruff flags (absent ones say `not there`)")
       for f in ("--all", "--cache-dir", "--exit-non-zero-on-fix", "--extend-exclude", "--fix-only",
                 "--per-file-ignores", "--preview", "--respect-gitignore", "--show-files", "--show-fixes",
                 "--silent", "--target-version", "--watch")},
    "--others": (("docs/configuration.md",), "git ls-files --others --exclude-standard"),
    "--exclude-standard": (("docs/configuration.md",), "git ls-files --others --exclude-standard"),
    "--install-extension": (("docs/editors.md",), "VS Code's `code --install-extension`"),
    "--update-goldens": (("README.md",), "the test suite's pytest option (tests/conftest.py)"),
    "--mypy": (("README.md",), "tests/test_target_lint.py's CI switch"),
    "--sessions": (("docs/serve.md",), "bench/serve_vs_ag2.py"),
    "--rounds": (("docs/serve.md",), "bench/serve_vs_ag2.py"),
    "--idle": (("docs/serve.md",), "bench/serve_vs_ag2.py"),
    "--compare": (("docs/serve.md",), "bench/serve_vs_ag2.py"),
    "--freeze": (("docs/ci.md",), "pre-commit autoupdate --freeze"),
    "--write": (("docs/compiler.md",), "python -m turnflow.spec.schemas --write"),
    "--fake": (("docs/rules.md",), "the example program's own switch"),
}


def read(doc: str) -> str:
    return (ROOT / doc).read_text(encoding="utf-8")


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = commands()
PARSER = build_parser()
OPTIONS = {name: {o for a in p._actions for o in a.option_strings} for name, p in COMMANDS.items()}


def options(name: str) -> list[argparse.Action]:
    return [a for a in COMMANDS[name]._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


# -- flags -----------------------------------------------------------------------------------------
def test_every_flag_the_docs_name_exists():
    every = set().union(*OPTIONS.values()) | {"--help", "--version"}
    wrong = []
    for doc in ALL_DOCS:
        for number, line in enumerate(read(doc).splitlines(), 1):
            for flag in FLAG.findall(line):
                if flag not in every and doc not in FOREIGN.get(flag, ((),))[0]:
                    wrong.append(f"{doc}:{number}: {flag} is no turnflow option")
    assert not wrong, "\n".join(wrong)


def mentions() -> list[tuple[str, str, str]]:
    """(where, command, flag) for each flag written after its command: in a line of a code block or
    an inline `code` span that starts with `turnflow CMD` or `CMD --`, and in every `--help` example."""
    names = "|".join(COMMANDS)
    lead = re.compile(rf"(?:^|turnflow )({names})((?: +[^\s|;`#]+)+)")
    found = []
    units = []
    for doc in ALL_DOCS:
        for number, line in enumerate(read(doc).splitlines(), 1):
            units += [(f"{doc}:{number}", span) for span in re.findall(r"`([^`\n]+)`", line)]
            units.append((f"{doc}:{number}", line))
    for name, parser in COMMANDS.items():
        units += [(f"turnflow {name} --help", line) for line in (parser.epilog or "").splitlines()]
    for where, text in units:
        text = text.strip().lstrip("$ ")
        for m in lead.finditer(text):
            if not (text[m.start():].startswith("turnflow ") or m.start() == 0):
                continue
            if text.startswith("ruff "):
                continue
            found += [(where, m.group(1), flag) for flag in FLAG.findall(m.group(2).split("  #")[0])]
    return found


def test_a_flag_written_after_its_command_is_that_commands():
    found = mentions()
    assert len({(c, f) for _, c, f in found}) > 50  # the scan sees what it should
    wrong = [f"{where}: `{cmd} {flag}`: `turnflow {cmd}` has no {flag}" for where, cmd, flag in found
             if flag not in OPTIONS[cmd] | {"--help"}]
    assert not wrong, "\n".join(wrong)


def test_every_option_of_every_command_is_documented():
    text = "\n".join(read(doc) for doc in ALL_DOCS)
    missing = []
    for name in COMMANDS:
        if f"turnflow {name}" not in text:
            missing.append(f"turnflow {name}")
        for action in options(name):
            if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text) for o in action.option_strings):
                missing.append(f"turnflow {name} {'/'.join(action.option_strings)}")
    assert not missing, "not in README.md or docs/*.md: " + ", ".join(missing)


def test_every_argument_has_help_and_every_command_examples():
    for name, parser in COMMANDS.items():  # docs/cli.md: "every subcommand's --help describes each argument"
        assert all(a.help for a in parser._actions), name
        assert "examples:" in (parser.epilog or ""), name


SIZES = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def number(text: str):
    """`1 MiB`, `8388608`, `60`, `10.0` -> the number; None when the text states no number."""
    m = re.fullmatch(r"\s*([0-9][0-9_,.]*)\s*(KiB|MiB|GiB)?\s*", text)
    if not m:
        return None
    value = float(m.group(1).replace(",", "").replace("_", ""))
    return value * SIZES[m.group(2)] if m.group(2) else value


DEFAULT_IN_HELP = re.compile(r"\(default:? ([^;)]+)")
# options whose argparse default is None ("not given") and whose code applies the stated default later
APPLIED_LATER = {("run", "--concurrency"): 8, ("run", "--lease"): 30}


def test_the_defaults_help_states_are_the_codes():
    from turnflow.cli.commands import run_batch

    assert (run_batch.DEFAULT_CONCURRENCY, run_batch.DEFAULT_LEASE) == (8, 30)
    checked, wrong = 0, []
    for name in COMMANDS:
        for action in options(name):
            for m in DEFAULT_IN_HELP.finditer(action.help or ""):
                stated = m.group(1).split(",")[0].strip()
                default = APPLIED_LATER.get((name, action.option_strings[-1]), action.default)
                value = number(stated)
                if value is not None:
                    checked += 1
                    if not isinstance(default, (int, float)) or value != default:
                        wrong.append(f"turnflow {name} {action.option_strings[-1]}: help says default {stated}, "
                                     f"the code {default!r}")
                elif isinstance(action.default, str) and re.fullmatch(r"[\w.:-]+", stated):
                    checked += 1
                    if stated != action.default:
                        wrong.append(f"turnflow {name} {action.option_strings[-1]}: help says default {stated}, "
                                     f"the code {action.default!r}")
    assert checked > 20 and not wrong, "\n".join(wrong)


def table(doc: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the Markdown table whose header row starts with `header`."""
    lines = read(doc).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def test_serve_options_table_names_every_option_with_its_default():
    rows = table("docs/serve.md", "| option | default |")
    documented = {}
    for cells in rows:
        flag = re.match(r"`(--[a-z-]+)", cells[0]).group(1)
        documented[flag] = cells[1]
    actions = {a.option_strings[-1]: a for a in options("serve")}
    assert set(documented) == set(actions)
    wrong = []
    for flag, stated in documented.items():
        default = actions[flag].default
        plain = stated.strip("`")
        value = number(plain)
        if value is not None:
            ok = value == default
        elif flag == "--max-unbound":  # 0 in the code: "an eighth of the connection cap, at least 8"
            ok = default == 0 and "eighth" in stated
        elif flag == "--registry":
            ok = default is None and plain == "STORE.agents"
        elif flag == "--auth-keys":
            ok = default is None and plain == "none"
        else:
            ok = plain == default
        if not ok:
            wrong.append(f"docs/serve.md: {flag}: documented default {stated}, the code {default!r}")
    assert not wrong, "\n".join(wrong)


# -- configuration ---------------------------------------------------------------------------------
def test_configuration_table_is_the_loaders_keys_and_defaults():
    from turnflow.workspace import config

    rows = {cells[0].strip("`"): cells[1] for cells in table("docs/configuration.md", "| key | default |")}
    assert set(rows) == config.KEYS
    defaults = config.Config(root=ROOT)
    wrong = []
    for key, stated in rows.items():
        value = getattr(defaults, key.replace("-", "_"))
        if key == "select":
            ok = value is None and stated == "every rule"
        elif key == "severity":
            ok = value == {} and stated == "each rule's own"
        elif key == "per-file-ignores":
            ok = value == () and stated == "`{}`"
        else:
            ok = json.loads(stated.strip("`")) == (list(value) if isinstance(value, tuple) else value)
        if not ok:
            wrong.append(f"docs/configuration.md: `{key}`: documented default {stated}, the code {value!r}")
    assert not wrong, "\n".join(wrong)


def test_readme_lists_every_configuration_key():
    from turnflow.workspace import config

    text = read("README.md")
    section = text[text.index("## Configuration"):text.index("## Editors")]
    named = set(re.findall(r"`([a-z-]+)`", section.split("```")[2]))
    assert config.KEYS <= named, f"README.md's configuration section omits {sorted(config.KEYS - named)}"


def test_show_settings_shows_each_default_as_its_toml_type(tmp_path, monkeypatch, capsys):
    """docs/configuration.md's table: `per-file-ignores` and `severity` are tables (`{}`), the
    lists are lists; `--show-settings` shows the defaults so, in text and json."""
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--show-settings", "--format", "json"]) == 0
    settings = {row["key"]: row["value"] for row in json.loads(capsys.readouterr().out)["settings"]}
    assert settings["per-file-ignores"] == {} and settings["severity"] == {}
    assert settings["extend-exclude"] == [] and settings["select"] is None
    assert main(["check", "--show-settings"]) == 0
    assert re.search(r"per-file-ignores\s+= \{\}", capsys.readouterr().out)


# -- environment variables -------------------------------------------------------------------------
ENV = re.compile(r"\b(TURNFLOW_[A-Z0-9_]+|NO_COLOR|FORCE_COLOR|XDG_CACHE_HOME)\b")


def test_every_environment_variable_named_is_read_and_every_turnflow_one_documented():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src").rglob("*.py"))
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("*.py") if p.name != Path(__file__).name)
    docs = "\n".join(read(doc) for doc in ALL_DOCS)
    named = set(ENV.findall(docs))
    unread = sorted(v for v in named if not re.search(rf"[\"']{v}[\"']", source + tests))
    assert not unread, f"named in the docs, read nowhere: {unread}"
    read_by_code = set(re.findall(r"environ(?:\.get)?[\[(]\"(TURNFLOW_[A-Z0-9_]+)\"", source))
    assert read_by_code and read_by_code <= named, f"undocumented: {sorted(read_by_code - named)}"


# -- JSON shapes -----------------------------------------------------------------------------------
def fields(text: str) -> set[str]:
    return set(re.findall(r"\"?([a-z_]+)\"?", text))


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One store holding a `run` session and a `run --tasks` task; the outputs of each command."""
    tmp = tmp_path_factory.mktemp("ran")
    shutil.copy(ROOT / "examples" / "support.flow", tmp / "support.flow")
    shutil.copy(ROOT / "examples" / "support_agents.yaml", tmp / "agents.yaml")
    (tmp / "tasks.jsonl").write_text('{"id": "t1", "task": "I was charged twice"}\n')
    (tmp / "bad.flow").write_text("workflow w {\n    participant writer\n    participant writer\n    start writer\n}\n")
    cwd = os.getcwd()
    os.chdir(tmp)
    outputs = {}
    try:
        for key, argv in {
            "run": ["run", "support.flow", "--agents", "agents.yaml", "--task", "hi", "--format", "json",
                    "--store", "s.db"],
            "tasks": ["run", "support.flow", "--agents", "agents.yaml", "--tasks", "tasks.jsonl", "--format", "json",
                      "--store", "s.db"],
            "inspect": ["inspect", "s.db", "--format", "json"],
            "graph": ["graph", "support.flow", "--format", "json"],
            "check": ["check", "--format", "json", "bad.flow"],
        }.items():
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
                main(argv)
            outputs[key] = stdout.getvalue()
    finally:
        os.chdir(cwd)
    return outputs


def test_run_json_fields(ran):
    text = read("docs/runtime.md")
    doc = re.search(r"`--format json` prints `\{(.*?)\]\}`", text, re.S).group(1)
    outer, inner = doc.split("\"turns\": [{")
    got = json.loads(ran["run"])
    assert set(got) == fields(outer) | {"turns"}
    assert set(got["turns"][0]) == fields(inner)


def test_run_tasks_json_fields(ran):
    doc = re.search(r"one line per task as it finishes: `\{(.*?)\}`", read("docs/scale.md"), re.S).group(1)
    line = json.loads(ran["tasks"].splitlines()[0])
    assert set(line) == fields(re.sub(r": \"done\"\|\"failed\"", "", doc))


def test_inspect_json_fields(ran):
    doc = re.search(r"The JSON is a list of\n?\s*`\{(.*?)\}`", read("docs/runtime.md"), re.S).group(1)
    assert set(json.loads(ran["inspect"])[0]) == fields(doc)


def test_graph_json_fields(ran):
    doc = re.search(r"`\{block, kind, title, nodes, edges: \[\{(.*?)\}\]\}`", read("docs/graph.md")).group(0)
    got = json.loads(ran["graph"])
    assert set(got) | set(got["edges"][0]) | {"edges"} == fields(doc.replace("rules: [line…]", "rules"))


def test_check_json_fields(ran):
    doc = re.search(r"Each diagnostic is an object:\n\n\s*```json\n(.*?)```", read("docs/cli.md"), re.S).group(1)
    example = json.loads(doc)
    got = json.loads(ran["check"])[0]
    assert set(got) == set(example) and set(got["related"][0]) == set(example["related"][0])
    readme = re.search(r"turnflow check --format json PATH +# \[\{(.*?)\}\]", read("README.md")).group(1)
    assert set(got) == fields(readme)
    assert {k: got[k] for k in ("line", "column", "end_column", "code", "name", "severity")} == \
        {"line": 3, "column": 17, "end_column": 23, "code": "TF101", "name": "duplicate-participant", "severity": "error"}


# -- the agents file -------------------------------------------------------------------------------
def test_agents_file_keys_are_the_loaders():
    from turnflow.runtime.agents import config

    text = read("docs/agents.md")
    openai = re.search(r"`kind: openai` keys: (.*?)\.\n", text, re.S).group(1)
    assert set(re.findall(r"`([a-z_]+)`", openai)) == config.KEYS["openai"]
    anthropic = re.search(r"`kind: anthropic`: the same keys plus `([a-z_]+)` \(default (\d+)\)", text)
    assert config.KEYS["anthropic"] - config.KEYS["openai"] == {anthropic.group(1)}
    from turnflow.runtime.agents.anthropic_messages import DEFAULT_MAX_TOKENS

    assert int(anthropic.group(2)) == DEFAULT_MAX_TOKENS


@pytest.mark.parametrize("name", ["OpenAIChatAgent", "AnthropicMessagesAgent"])
def test_model_agent_signatures_as_documented(name):
    import importlib

    module = {"OpenAIChatAgent": "openai_chat", "AnthropicMessagesAgent": "anthropic_messages"}[name]
    cls = getattr(importlib.import_module(f"turnflow.runtime.agents.{module}"), name)
    heading = re.search(rf"^### `{name}\((.*?)\)`$", read("docs/agents.md"), re.M).group(1)
    params = inspect.signature(cls.__init__).parameters
    stated = dict(re.findall(r"(\w+)=([^,]+)", heading))
    assert stated
    for key, value in stated.items():
        assert key in params, f"docs/agents.md: {name} has no parameter {key}"
        assert params[key].default == json.loads(value.replace("None", "null").replace("True", "true")
                                                 .replace("'", '"')), (name, key)


# -- example outputs -------------------------------------------------------------------------------
EXAMPLES = [  # (document, the command, where its output starts in the document)
    ("README.md", "check --graph-stats examples/support.flow", "$ turnflow check --graph-stats examples/support.flow\n"),
    ("README.md", "simulate examples/support.flow --runs 1000 --seed 1",
     "$ turnflow simulate examples/support.flow --runs 1000 --seed 1\n"),
    ("docs/agents.md", "simulate examples/support.flow --runs 1000 --seed 0", "```\nexamples/support.flow: workflow"),
]


@pytest.mark.parametrize("doc,command,anchor", EXAMPLES)
def test_example_output_is_what_the_command_prints(doc, command, anchor, monkeypatch):
    text = read(doc)
    start = text.index(anchor) + len(anchor)
    if anchor.startswith("```\n"):
        start = text.index(anchor) + 4
    shown = text[start:text.index("```", start)]
    monkeypatch.chdir(ROOT)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        main(command.split())
    printed = stdout.getvalue()
    if command.startswith("check"):
        printed = printed.split("All checks passed")[0]
    assert printed == shown, f"{doc}: `turnflow {command}` prints\n{printed}"


# -- what the docs say about exit codes and messages -----------------------------------------------
def test_an_unknown_block_is_exit_2_in_every_command(tmp_path, monkeypatch, capsys):
    """README.md and docs/cli.md: an unknown `--block` in any command is exit 2; docs/agents.md's
    `simulate` section says so too."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "examples" / "support.flow", "support.flow")
    for argv in (["compile", "support.flow"], ["graph", "support.flow"], ["simulate", "support.flow"]):
        assert main([*argv, "--block", "zzz"]) == 2, argv
        assert "has no block `zzz` (blocks: support)" in capsys.readouterr().err
    assert "1 when FILE has errors; 2 for a missing file, an unknown `--block`" in read("docs/agents.md")


def test_empty_selector_lists_are_refused_as_the_docs_say(tmp_path, capsys):
    """docs/configuration.md: `--select ''` and `--select TF1,` are usage errors naming the flag;
    docs/cli.md must not promise the contrary (only `--exclude` takes an empty list)."""
    f = tmp_path / "a.flow"
    shutil.copy(ROOT / "examples" / "support.flow", f)
    for flag in ("--select", "--extend-select", "--ignore", "--extend-ignore"):
        assert main(["check", flag, "", str(f)]) == 2
        assert "an empty rule selector" in capsys.readouterr().err
    assert main(["check", "--exclude", "", str(f)]) == 0
    capsys.readouterr()
    cli = read("docs/cli.md")
    assert "lists of `check --select`" not in cli and "`check --exclude` (an empty list)" in cli


# -- docs/cli.md: numbers, durations and empty values ----------------------------------------------
BASE = {  # the least each command needs besides the option under test
    "check": [], "fmt": [], "rule": [], "compile": ["a.flow"], "decompile": ["a.json"], "schema": [],
    "graph": ["a.flow"], "run": ["a.flow", "--agents", "a.yaml"], "inspect": ["s.db"], "simulate": ["a.flow"],
    "migrate": ["a.py"], "serve": [], "lsp": [], "completion": ["bash"],
}
# values that may be empty, or whose emptiness the command refuses once it runs (tested there)
FREE = {("run", "--task"): "free text", ("check", "--exclude"): "an empty list of globs",
        ("fmt", "--exclude"): "an empty list of globs",
        ("check", "--select"): "refused when read: `--select`: an empty rule selector",
        ("check", "--extend-select"): "the same", ("check", "--extend-ignore"): "the same (`--ignore`)",
        ("serve", "--listen"): "refused when read: expected HOST:PORT",
        ("migrate", "--import"): "refused when read: takes MODULE:ATTRIBUTE"}


def parse(argv: list[str]) -> tuple[int, str]:
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            PARSER.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0), stderr.getvalue()
    return 0, ""


def test_every_named_value_refuses_the_empty_string():
    """docs/cli.md, "An empty path or name": every argument that names something refuses ''
    by name, exit 2; only free text (and the lists the paragraph names) may be empty."""
    checked, wrong = 0, []
    for name, parser in COMMANDS.items():
        for action in parser._actions:
            if action.nargs == 0 or isinstance(action, argparse._HelpAction) or action.choices:
                continue
            flag = action.option_strings[-1] if action.option_strings else None
            if (name, flag) in FREE:
                continue
            base = list(BASE[name])
            if flag is None:  # a positional: put '' in its place
                base = [""] + base[1:] if base else [""]
                argv = [name, *base]
            else:
                argv = [name, *base, flag, ""]
            status, said = parse(argv)
            checked += 1
            if status != 2 or not ("(an empty string)" in said or "got ''" in said):
                wrong.append(f"turnflow {' '.join(argv)!r}: exit {status}, {said.strip()[-120:]!r}")
    assert checked > 30 and not wrong, "\n".join(wrong)


def test_every_number_flag_is_one_the_numbers_paragraph_names():
    """docs/cli.md, "Numbers and durations": the flags that take a number or a duration, every
    one read by a type of turnflow/cli/util.py (serve's by name in docs/serve.md's table)."""
    from turnflow.cli import util

    types = {getattr(util, n) for n in dir(util) if callable(getattr(util, n))}
    text = read("docs/cli.md")
    paragraph = text[text.index("**Numbers and durations.**"):text.index("**An empty path or name.**")]
    named = {}
    current = None
    for m in re.finditer(r"`(?:(\w+) )?(--[a-z-]+)`", paragraph):
        current = m.group(1) or current
        named.setdefault(current, set()).add(m.group(2))
    wrong = []
    for name in COMMANDS:
        for action in options(name):
            if action.type is None or action.type not in types or action.choices:
                continue
            status, said = parse([name, *BASE[name], action.option_strings[-1], "nan"])
            if status != 2 or "expected" not in said:
                continue  # not a number: a path, a name
            if name != "serve" and action.option_strings[-1] not in named.get(name, set()):
                wrong.append(f"turnflow {name} {action.option_strings[-1]} takes a number; docs/cli.md does not name it")
            # "`nan` and `inf` are no number of seconds; only `simulate --seed` takes a negative number"
            for value in ("inf", "-inf", "-3", "-5s", "-.5"):
                status, said = parse([name, *BASE[name], action.option_strings[-1], value])
                takes = (name, action.option_strings[-1]) == ("simulate", "--seed") and value == "-3"
                if (status == 0) != takes or (status == 2 and f"got '{value}'" not in said):
                    wrong.append(f"turnflow {name} {action.option_strings[-1]} {value}: exit {status}, {said[-100:]!r}")
    for name, flags in named.items():
        for flag in flags:
            if flag not in OPTIONS[name]:
                wrong.append(f"docs/cli.md names `{name} {flag}`, which does not exist")
    assert not wrong, "\n".join(wrong)


# -- extras and examples ---------------------------------------------------------------------------
def test_every_extra_the_docs_install_exists_and_every_extra_is_documented():
    import tomllib

    extras = set(tomllib.loads(read("pyproject.toml"))["project"]["optional-dependencies"])
    named = set()
    for doc in ALL_DOCS:
        for m in re.finditer(r"turnflow\[([a-z0-9,-]+)\]|'\.\[([a-z0-9,-]+)\]'", read(doc)):
            named.update((m.group(1) or m.group(2)).split(","))
    assert named == extras, (sorted(named - extras), sorted(extras - named))


def test_serve_md_names_the_workflow_examples_that_need_no_ag2_extension():
    """docs/serve.md: `run --hub` compiles a workflow in AG2's built-in conditions where exact; the
    examples it says need no extension are those, and the ones it says still need one do."""
    import turnflow
    from turnflow.interop.ag2 import extensions_needed

    needs: dict[str, set[str]] = {}
    for path in sorted((ROOT / "examples").glob("*.flow")):
        for spec in turnflow.compile(path.read_text(encoding="utf-8"), builtin_where_exact=True):
            if spec["kind"] == "workflow":
                needs.setdefault(path.stem, set()).update(extensions_needed(spec["knobs"]))
    text = " ".join(read("docs/serve.md").split())
    m = re.search(r"three of the (\w+) workflow examples \(([^)]*)\) need no extension then\. "
                  r"A workflow that still needs one \((.*?)\) is run", text)
    assert m, "docs/serve.md's sentence on the examples moved"
    assert {"three": 3, "four": 4, "five": 5, "six": 6}[m.group(1)] == len(needs)
    assert set(re.findall(r"`(\w+)`", m.group(2))) == {name for name, ext in needs.items() if not ext}
    assert set(re.findall(r"`(\w+)\.flow`", m.group(3))) == {name for name, ext in needs.items() if ext}


CHOICES = re.compile(r"(--[a-z-]+)[ =]`?([a-z0-9-]+(?:\\?\|[a-z0-9-]+)+)")


def test_the_values_a_flag_is_documented_to_take_are_its_choices():
    """`--format text|json`, `--durability process|full`, `--loop auto|asyncio|uvloop`, ...: the
    alternatives a synopsis lists are the option's choices; and docs/cli.md's `--output-format` row
    lists `check --format`'s."""
    owners = {flag: [n for n in COMMANDS if flag in OPTIONS[n]] for flag in set().union(*OPTIONS.values())}
    checked, wrong = 0, []
    for doc in ALL_DOCS:
        for number, line in enumerate(read(doc).splitlines(), 1):
            for m in CHOICES.finditer(line):
                before = re.findall(r"turnflow (\w+)", line[:m.start()])  # the command the flag follows
                command = before[-1] if before else None
                flag, values = m.group(1), set(m.group(2).replace("\\", "").split("|"))
                candidates = [command] if command in COMMANDS else owners.get(flag, [])
                choice_sets = [set(a.choices) for n in candidates for a in options(n)
                               if flag in a.option_strings and a.choices]
                if not choice_sets:
                    continue
                checked += 1
                # a synopsis lists every choice; a sentence may name a subset (`--color always|never`)
                if not any(values == c or values < c and "[" not in line for c in choice_sets):
                    wrong.append(f"{doc}:{number}: {flag} {'|'.join(sorted(values))}, the code takes "
                                 f"{' or '.join('|'.join(sorted(c)) for c in choice_sets)}")
    assert checked >= 10 and not wrong, "\n".join(wrong)
    row = next(cells for cells in table("docs/cli.md", "| ruff flag |") if cells[0] == "`--output-format`")
    listed = set(re.findall(r"`([a-z-]+)`", row[1].split("; not")[0])) - {"--format"}
    assert listed == set(next(a.choices for a in options("check") if "--format" in a.option_strings))


def test_the_commands_the_output_formats_section_names_take_both_spellings(tmp_path, capsys):
    """docs/cli.md, "Output formats (`check`, `migrate`: `--format` / `--output-format`)": both
    commands take ruff's spelling too, with the same formats. Before, `migrate --output-format
    json` was `unrecognized arguments`, exit 2."""
    heading = re.search(r"^## Output formats \((.*?)\)$", read("docs/cli.md"), re.M).group(1)
    named, flags = heading.split(":")
    formats = None
    for name in re.findall(r"`(\w+)`", named):
        for flag in re.findall(r"`(--[a-z-]+)`", flags):
            assert flag in OPTIONS[name], f"turnflow {name} has no {flag}"
        action = next(a for a in options(name) if "--format" in a.option_strings)
        assert formats is None or set(action.choices) == formats
        formats = set(action.choices)
    source = tmp_path / "team.py"
    shutil.copy(ROOT / "tests" / "fixtures" / "migrate" / "classic" / "builder_and_closure.py", source)
    assert main(["migrate", str(source), "--output-format", "json", "-o", str(tmp_path / "team.flow")]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


def test_an_internal_error_reads_as_the_exit_code_table_says(monkeypatch, capsys):
    """docs/cli.md, exit 3: `turnflow: internal error: TYPE: MESSAGE` and where to report it, no
    traceback unless TURNFLOW_DEBUG is set."""
    from turnflow.cli.commands import schema

    def boom(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(schema, "run", boom)
    monkeypatch.delenv("TURNFLOW_DEBUG", raising=False)
    assert main(["schema"]) == 3
    said = capsys.readouterr().err
    assert said.startswith("turnflow: internal error: ZeroDivisionError: division by zero\n")
    assert "Traceback" not in said and len(said.splitlines()) == 2
    row = next(cells for cells in table("docs/cli.md", "| code | meaning |") if cells[0] == "`3`")
    assert "two lines on stderr, `turnflow: internal error: TYPE: MESSAGE`" in row[1]
    monkeypatch.setenv("TURNFLOW_DEBUG", "1")
    assert main(["schema"]) == 3 and "Traceback" in capsys.readouterr().err


def test_no_message_tells_a_user_to_install_an_extra_from_pypi(monkeypatch, capsys):
    """README.md: turnflow is not on PyPI; every install is from a checkout or the git URL. Before,
    `turnflow lsp` without pygls said `pip install 'turnflow[lsp]'` (and so did serve, the agents
    file, the PostgreSQL store, AG2 interop): a command that finds nothing, or someone else's
    package of that name."""
    pypi = re.compile(r"pip install '?turnflow\[[a-z0-9,{}_-]+\]'?(?! @ git\+)")
    wrong = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in sorted((ROOT / "src").rglob("*.py"))
             if p.name != "extras.py"  # the one place that writes the hint
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pypi.search(line)]
    wrong += [f"{doc}:{n}: {line.strip()}" for doc in ALL_DOCS for n, line in enumerate(read(doc).splitlines(), 1)
              if pypi.search(line.replace("`pip install 'turnflow[EXTRA]'`", ""))]
    assert not wrong, "\n".join(wrong)
    assert "not on PyPI yet" in read("README.md")
    import sys

    monkeypatch.setitem(sys.modules, "pygls", None)
    assert main(["lsp"]) == 2
    said = capsys.readouterr().err
    assert "pip install 'turnflow[lsp] @ git+https://github.com/turnflow/turnflow'" in said
    assert "pip install -e '.[lsp]'" in said


# -- links -----------------------------------------------------------------------------------------
def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        s = slug(heading)
        found.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return found


def test_every_relative_link_and_anchor_leads_somewhere():
    wrong = []
    for doc in [*ALL_DOCS, "ARCHITECTURE.md"]:
        path = ROOT / doc
        text = re.sub(r"`[^`\n]*`", "", read(doc))  # `agents[NAME](state)` is code, not a link
        for number, line in enumerate(text.splitlines(), 1):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):
                    continue
                file, _, fragment = target.partition("#")
                linked = (path.parent / file).resolve() if file else path
                if not linked.exists():
                    wrong.append(f"{doc}:{number}: {target}: no such file")
                elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                    wrong.append(f"{doc}:{number}: {target}: no heading has that anchor")
    assert not wrong, "\n".join(wrong)


def test_the_telemetry_event_types_documented_are_the_accepted_ones():
    """docs/agents.md §4 (what `emit_event` accepts), §1 (`send_event`'s `message_type`) and the
    model tool table (`send_event`'s enum) list the code's event types. Before, §4 left out
    `tool_call` and `tool_result`, which every agent may emit."""
    from turnflow.runtime.agents.contract import MESSAGE_TYPES, TELEMETRY_EVENTS
    from turnflow.runtime.agents.platform_tools import MODEL_EVENT_TYPES

    text = read("docs/agents.md")
    emitted = re.search(r"with `E` ∈ (.*?); only `event` is required", text, re.S).group(1)
    assert set(re.findall(r"`(\w+)`", emitted)) == set(TELEMETRY_EVENTS)
    sent = re.search(r"`message_type` ∈ ([\w, ]+) \(else `ToolError`", text).group(1)
    assert set(re.findall(r"\w+", sent)) == set(MESSAGE_TYPES)
    offered = re.search(r"\| `send_event` \| .*?`message_type`: enum ([\w, ]+) \|", text).group(1)
    assert set(re.findall(r"\w+", offered)) == set(MODEL_EVENT_TYPES)


def test_the_scripted_step_keys_documented_are_the_accepted_ones():
    from turnflow.runtime.agents.scripted import STEP_KEYS

    listed = re.search(r"\(steps: (`say`.*?);", read("README.md")).group(1)
    assert set(re.findall(r"`(\w+)`", listed)) == set(STEP_KEYS)


def test_the_capabilities_table_gives_the_codes_defaults():
    from dataclasses import fields as dataclass_fields

    from turnflow.runtime.agents.contract import Capabilities

    rows = {cells[0].strip("`"): cells[1] for cells in table("docs/agents.md", "| field | values | meaning |")}
    defaults = {f.name: f.default for f in dataclass_fields(Capabilities)}
    assert set(rows) == set(defaults)
    for name, stated in rows.items():
        default = defaults[name]
        if isinstance(default, bool):
            assert f"(default {str(default).lower()})" in stated, name
        else:
            assert f'`"{default}"` (default)' in stated, name


def test_the_graph_stats_json_example_is_what_check_writes(monkeypatch, capsys):
    """docs/cli.md: with `check --graph-stats --format json` one object per block follows the
    diagnostics; its example is examples/support.flow's (whose block starts on line 2)."""
    doc = re.search(r"`(\{\"path\": \"support\.flow\", \"line\": \d+, \"stats\": \{.*?)\.\.\.\}\}`",
                    read("docs/cli.md")).group(1)
    monkeypatch.chdir(ROOT / "examples")
    assert main(["check", "--graph-stats", "--format", "json", "support.flow"]) == 0
    got = json.loads(capsys.readouterr().out)[-1]
    stated = json.loads(doc.rstrip(", ") + "}}")
    assert {k: got[k] for k in ("path", "line")} == {k: stated[k] for k in ("path", "line")}
    assert stated["stats"].items() <= got["stats"].items() and "code" not in got


def test_ag2_interops_own_install_hint_is_worded_as_every_other():
    """turnflow/frameworks/ag2/interop.py runs in AG2's process and imports only turnflow.spec
    (tests/test_boundaries.py), so it writes `extras.pip_install`'s hint itself: the same words."""
    from turnflow.extras import pip_install

    text = (ROOT / "src/turnflow/frameworks/ag2/interop.py").read_text(encoding="utf-8")
    joined = "".join(re.findall(r'^\s*(?:raise ImportError\()?"([^"]*)"', text, re.M))
    assert f"turnflow.interop.ag2 needs AG2 1.2.1: {pip_install('ag2')}" in joined
