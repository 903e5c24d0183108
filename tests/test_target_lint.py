"""The modules `turnflow compile --target langgraph|ag2-groupchat|autogen` writes are lint-clean:
users paste them into codebases that run linters (docs/targets.md, "Generated code is lint-clean").

Every example workflow (its routing alone where a target refuses its context, as
tests/test_target_*.py compile it), generated flows (tests/flow_strategies.py) and a few written to
reach the corners (participants named like keywords, builtins and the module's own names, `previous`,
`== true` / `== null`, a silenced TF303 comparison, no `max_turns`) are compiled for each Python
target into one temporary folder, then:

- `ruff check` (one process over the folder) with the project's selection, pyflakes, pycodestyle
  and bugbear (E, F, W, B), plus import order (I), at the project's line length (150; a flow with
  a long description or title, or a rule with many long terms, makes longer lines);
- `mypy --strict --ignore-missing-imports` (every function annotated, no `Any` returned where a
  type is declared; the frameworks' own annotations where they ship them: LangGraph's and
  AgentChat's) on representative modules only, two per target in one process (the corner flow
  whose template is at its fullest, and an example with an empty context). mypy takes ~7.5 s of
  CPU for the frameworks' stubs alone, the same for 3 modules as for 6, so it runs in CI's lint
  step beside `mypy src`, not in the suite: `python3 tests/test_target_lint.py --mypy` (.ci/run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import turnflow
from flow_strategies import workflow_blocks
from target_harness import DIFF_TOOLS, without_context
from turnflow.compiler.emit.spec import CompileError
from turnflow.compiler.emit.targets import compile_target
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.flow"))
PYTHON_TARGETS = ("langgraph", "ag2-groupchat", "autogen")
RUFF = ["check", "--isolated", "--no-cache", "--select", "E,F,W,B,I", "--line-length", "150",
        "--target-version", "py310", "--output-format", "concise"]
MYPY = ["--strict", "--ignore-missing-imports", "--no-incremental", "--cache-dir", "/dev/null",
        "--python-version", "3.10", "--no-error-summary", "--hide-error-context"]

#: flows written to reach what generated flows rarely do
CORNERS = {
    "names": ("workflow w \"A title\" {\n    participant run\n    participant groupchat\n    participant class\n"
              "    participant bot-1 tools [t1]\n    participant agent_0\n    start run\n    max_turns 7\n"
              "    run -> groupchat when text contains \"go\"\n    run -> previous\n    groupchat -> class\n"
              "    class -> bot-1\n    bot-1 -> agent_0 when tool t1\n    bot-1 -> terminate \"done\"\n"
              "    agent_0 -> run\n}\n"),
    "equality": ("workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 9\n"
                 "    context done = false\n    context note = null\n"
                 "    a -> terminate \"done\" when context.done == true\n"
                 "    a -> b when not context.note == null and context.done == false\n"
                 "    a -> b when context.done != true or len(context.note) > 2\n"
                 "    b -> a\n}\n"),
    "silenced": ("workflow w {\n    participant str\n    participant isinstance\n    participant float\n    start str\n"
                 "    max_turns 6\n    context n = 1  # turnflow: ignore[TF303, TF304]\n"
                 "    str -> isinstance when context.n > 0 or context.n == 2  # turnflow: ignore[TF303, TF304]\n"
                 "    str -> terminate \"never\"\n    isinstance -> float when text contains \"it's \\\"quoted\\\"\"\n"
                 "    isinstance -> previous\n    float -> terminate \"done\"\n}\n"),
}


def _routing_only(text: str, block: str) -> str:
    chosen = next(b for b in turnflow.parse(text).blocks if b.name.name == block)
    return print_flow(ast.FlowFile(span=chosen.span, blocks=[without_context(chosen)]))


def _module(text: str, target: str, block: str | None = None, path: str = "flow.flow") -> str | None:
    """The target's module for `text` (its routing alone when the target refuses its context), or
    None when the target refuses the flow anyway."""
    try:
        return compile_target(text, target, block=block, path=path)
    except CompileError:
        pass
    if block is None:
        block = turnflow.parse(text).blocks[0].name.name
    try:
        return compile_target(_routing_only(text, block), target, path=path)
    except CompileError:
        return None


def _generated(n: int) -> list[str]:
    """`n` generated flows without errors (derandomized: the same list each run)."""
    found: list[str] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(workflow_blocks(tools=DIFF_TOOLS))
    def gather(block):
        text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
        if not any(d.severity == "error" for d in turnflow.check(text)):
            found.append(text)

    gather()
    return found


def _modules() -> dict[str, str]:
    """file name → generated module: every example workflow, the corner flows and generated flows,
    for each Python target."""
    out: dict[str, str] = {}
    for path in EXAMPLES:
        text = path.read_text(encoding="utf-8")
        for b in turnflow.parse(text).blocks:
            if b.kind != "workflow":
                continue
            for target in PYTHON_TARGETS:
                module = _module(text, target, b.name.name, path.name)
                assert module is not None, (path.name, b.name.name, target)
                out[f"example_{path.stem}_{b.name.name}_{target.replace('-', '_')}.py"] = module
    flows = {f"corner_{k}": v for k, v in CORNERS.items()}
    flows.update({f"generated_{i}": text for i, text in enumerate(_generated(30))})
    for name, text in flows.items():
        for target in PYTHON_TARGETS:
            module = _module(text, target)
            if module is not None:
                out[f"{name}_{target.replace('-', '_')}.py"] = module
    return out


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("targets")
    found = _modules()
    for name, source in found.items():
        (folder / name).write_text(source, encoding="utf-8")
    return folder, found


def test_the_modules_cover_every_target_and_the_corners(modules):
    _folder, found = modules
    for target in PYTHON_TARGETS:
        suffix = f"_{target.replace('-', '_')}.py"
        assert sum(n.endswith(suffix) and n.startswith("generated_") for n in found) >= 10, target
        # `bot-1` is no AgentChat agent name (TF304, never written): the other corners there
        assert all(f"corner_{k}{suffix}" in found for k in CORNERS if (k, target) != ("names", "autogen")), target
    assert any("_compare(" in s for n, s in found.items() if n.endswith("_ag2_groupchat.py"))
    assert any("== True" in s and "== None" in s for n, s in found.items() if n.endswith("_langgraph.py"))


def test_every_generated_module_passes_ruff(modules):
    folder, found = modules
    run = subprocess.run([sys.executable, "-m", "ruff", *RUFF, str(folder)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, f"ruff on {len(found)} modules:\n{run.stdout[-6000:]}{run.stderr[-2000:]}"


def _representative(target: str) -> list[str]:
    """The modules of `target` mypy checks: the corner flow whose template is at its fullest (a
    silenced comparison, `_compare`; `previous`; text and context conditions) and an example
    with an empty context (its `CONTEXT` needs its annotation most)."""
    suffix = f"_{target.replace('-', '_')}.py"
    return [f"corner_silenced{suffix}", f"example_helpdesk_helpdesk{suffix}"]


def mypy_representative_modules() -> int:
    """`python3 tests/test_target_lint.py --mypy` (CI's lint step): the representative modules of
    every Python target written to a temporary folder and checked by `mypy --strict` in one
    process; its exit status."""
    import tempfile

    found = _modules()
    chosen = [n for t in PYTHON_TARGETS for n in _representative(t)]
    missing = [n for n in chosen if n not in found]
    if missing:
        print(f"test_target_lint --mypy: no module for {missing}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as folder:
        for name in chosen:
            (Path(folder) / name).write_text(found[name], encoding="utf-8")
        run = subprocess.run([sys.executable, "-m", "mypy", *MYPY, *chosen], text=True, timeout=600, cwd=folder)
    print(f"mypy --strict on {len(chosen)} generated modules: {'clean' if run.returncode == 0 else 'FAILED'}")
    return run.returncode


def test_the_representative_modules_exist(modules):
    """(What `--mypy` checks in CI: the fullest corner flow and an example with an empty context,
    for each target.)"""
    _folder, found = modules
    chosen = [n for t in PYTHON_TARGETS for n in _representative(t)]
    assert all(n in found for n in chosen), chosen


if __name__ == "__main__":
    if sys.argv[1:] != ["--mypy"]:
        raise SystemExit("usage: python3 tests/test_target_lint.py --mypy")
    raise SystemExit(mypy_representative_modules())
