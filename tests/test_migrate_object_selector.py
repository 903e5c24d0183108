"""`from_object` on an AutoGen AgentChat 0.7 `SelectorGroupChat` with a `selector_func` /
`candidate_func` (issue 23, part 2): `dump_component()` leaves the functions out, so the live path
reads them from their own source with their global and closure names bound to the live agents (or
literal values), as the static path reads the same team written in Python; a function without
Python source is a TF404 saying so, never silently the selector model's choice."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import pytest

from turnflow.migrate import from_object, migrate

FIXTURE = Path(__file__).parent / "fixtures" / "migrate" / "live" / "selector_team.py"


@pytest.fixture(autouse=True)
def _agentchat(monkeypatch):
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def _body(text: str) -> str:
    """The flow without its header comment and the input positions (a live object has none)."""
    text = re.sub(r" \(input [^)]*\)", "", text)
    return text[text.index("workflow"):]


def test_the_selector_functions_are_read_from_the_live_team_as_from_its_source():
    team = _load(FIXTURE, "selector_team_fixture").team
    text, notes = from_object(team, name="team")
    static = migrate(FIXTURE.read_text(encoding="utf-8"), FIXTURE.name)
    assert _body(text) == _body(static.text)
    # selector_func: the planner after every other speaker; candidate_func after the planner: the
    # web searcher when the text says SEARCH_WORD (a global bound to its value), else the model
    # picks among the two others
    assert "WebSearchAgent -> PlanningAgent" in text and "DataAnalystAgent -> PlanningAgent" in text
    assert 'PlanningAgent -> WebSearchAgent when text contains "search"' in text
    assert "handoff WebSearchAgent ->" not in text
    assert not [n for n in notes if n.code == "TF404"]


def _team_module(tmp_path: Path, selector: str) -> Path:
    path = tmp_path / "closure_team.py"
    path.write_text(textwrap.dedent('''\
        import functools
        from autogen_agentchat.agents import AssistantAgent
        from autogen_agentchat.teams import SelectorGroupChat
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        client = OpenAIChatCompletionClient(model="gpt-4o")
        writer = AssistantAgent("writer", model_client=client, description="Writes.")
        critic = AssistantAgent("critic", model_client=client, description="Criticises.")
        editor = AssistantAgent("editor", model_client=client, description="Edits.")


        def make_selector(first, second):
            def select(messages):
                if messages[-1].source == first.name:
                    return second.name
                return first.name
            return select


        def pick(order, messages):
            return order[0]

        ''') + f"team = SelectorGroupChat([writer, critic, editor], model_client=client, selector_func={selector})\n",
        encoding="utf-8")
    return path


def test_closure_names_are_bound_to_the_live_agents(tmp_path):
    team = _load(_team_module(tmp_path, "make_selector(writer, critic)"), "closure_team_a").team
    text, notes = from_object(team, name="team")
    # `first` / `second` are the closure's cells: writer -> critic, everyone else -> writer
    assert "writer -> critic" in text and "critic -> writer" in text and "editor -> writer" in text
    assert "handoff" not in text
    assert not [n for n in notes if n.code == "TF404"]


def test_a_selector_without_python_source_is_reported(tmp_path):
    team = _load(_team_module(tmp_path, 'functools.partial(pick, ["editor"])'), "closure_team_b").team
    text, notes = from_object(team, name="team")
    (note,) = [n for n in notes if n.code == "TF404"]
    assert "`selector_func` (`partial`) has no Python source" in note.message
    assert "selector model pick instead" in note.message
    assert "has no Python source" in text  # the comment in the flow says it too
