"""The docs on fresh virtual environments: a missing dependency in a doc fails CI.

    python3 tests/docs_fresh_env.py            # what `.ci/run` runs before the test suite

1. The tracked files are copied to a temporary folder and the README's first command runs there
   as written (it creates `.venv`, installs turnflow without extras and checks the examples).
2. Every document (README.md, docs/*.md) gets an environment with only the extras it names in
   its `pip install` lines (`'.[serve]'`, `'turnflow[langgraph,ag2,autogen] @ git+…'`; the test
   extra never): the README's own `.venv` when it names none, else a new venv with
   `pip install 'COPY[EXTRAS]'` (the same package the git URL installs).
3. In that environment, in a sandbox holding the examples and the inputs the docs assume, every
   shell line tests/test_doc_snippets.py runs is run again with that environment's `turnflow`,
   and every ```python block runs with that environment's Python, unless NOT_RUN says why not.
   A line must exit 0 or 1 (findings) without a traceback; a Python block must exit 0.

tests/test_docs_fresh_env.py checks the tables here against the docs on every test run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_doc_snippets import DOCS, INPUTS, ROOT, concrete, why_not  # noqa: E402

EXTRAS = re.compile(r"pip install[^\n`]*?['\"]?(?:\.|turnflow)\[([a-z0-9,\- ]+)\]")
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
TEXT = 'text = open("support.flow", encoding="utf-8").read()\n'
PRELUDE = {  # document -> what its Python blocks take as given (said in the doc's own words)
    "README.md": TEXT,
    "docs/compiler.md": TEXT,
    "docs/targets.md": TEXT,
    "docs/analysis.md": TEXT + "import turnflow\n",
}
NOT_RUN = {  # (document, a fragment of the block's first lines) -> why it does not run here
    ("README.md", "ag2_graph_dict"): "reads the user's own AG2 graph (`ag2_graph_dict`)",
    ("docs/agents.md", "class MyAgent:"): "the protocol's outline (`...` bodies)",
    ("docs/agents.md", "def planner(tools, ctx):"): "calls OpenAI's API (examples/frameworks_planner.py is the file)",
    ("docs/agents.md", "my_agent.on_message"): "tests the reader's own `my_agent`",
    ("docs/analysis.md", "from turnflow.compiler.speaker_graph import END"): "a tour of attributes, one per line",
    ("docs/compiler.md", "TransitionGraph.model_validate(data)"): "reads the user's own graph (`data`)",
    ("docs/compiler.md", "schemas.validate_spec(spec)"): "validates the user's own graph and spec",
    ("docs/migrate.md", "from_object(manager"): "reads the user's own team objects",
    ("docs/migrate.md", "graph_dict = {"): "an excerpt of a user's GroupChat program",
    ("docs/rules.md", ""): "excerpts of the user code a migrate rule reads",
    ("docs/runtime.md", "async def main(spec):"): "the outline of a program around the user's spec",
    ("docs/serve.md", "from ag2.network import HubClient"): "needs a running turnflow serve (tests/test_serve.py)",
    ("docs/targets.md", "from support_graph import"): "needs the module `compile --target` writes and the reader's agents",
    ("docs/targets.md", "from support_team import"): "needs the reader's AgentChat agents and model client",
    ("docs/targets.md", 'json.load(open("helpdesk_team.json"))'):
        "needs the reader's OpenAI API key (tests/test_target_autogen_json.py binds replayed clients the same way)",
}


def doc_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def extras_named(text: str) -> tuple[str, ...]:
    """The extras a document's `pip install` lines name, the test extra and placeholders left out."""
    found = {e.strip() for group in EXTRAS.findall(text) for e in group.split(",")}
    return tuple(sorted(found - {"test", "EXTRA", ""}))


def python_blocks(doc: str, text: str) -> list[tuple[int, str, str]]:
    """(line, code, why not run or '') for every ```python block of a document."""
    out = []
    for m in PYTHON_BLOCK.finditer(text):
        code = m.group(1)
        reason = next((why for (d, frag), why in NOT_RUN.items() if d == doc and frag in code), "")
        out.append((text.count("\n", 0, m.start()) + 1, code, reason))
    return out


def first_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```(?:sh|bash|shell)\n(.*?)\n", readme).group(1).split("  #")[0].strip()


def clean_env(bin_dir: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "FORCE_COLOR", "PYTHONDONTWRITEBYTECODE")}
    env["NO_COLOR"] = "1"
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(argv: list[str], cwd: Path, env: dict, stdin: bytes = b"", timeout: float = 600) -> tuple[int, str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=timeout)
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


def copy_tracked(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def wheel(repo: Path, out: Path) -> Path:
    """turnflow built once as a wheel: the environments install it with their extras (several pip
    processes building from one folder at once collide in its `build/`)."""
    status, text = run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(repo)], repo,
                       clean_env(None))
    if status:
        raise SystemExit(f"pip wheel failed:\n{text[-2000:]}")
    return next(out.glob("turnflow-*.whl"))


def environment(extras: tuple[str, ...], repo: Path, venvs: Path, cache: dict) -> Path:
    """The `bin` folder of a venv holding turnflow with exactly `extras` (built once per set)."""
    if not extras:
        return repo / ".venv" / "bin"
    if extras not in cache:
        venv = venvs / "-".join(extras)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        status, out = run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           f"{cache['wheel']}[{','.join(extras)}]"], repo, clean_env(None))
        if status:
            raise SystemExit(f"pip install '.[{','.join(extras)}]' failed:\n{out[-2000:]}")
        cache[extras] = venv / "bin"
    return cache[extras]


def sandbox(tmp: Path, bin_dir: Path) -> Path:
    box = tmp
    shutil.copytree(ROOT / "examples", box / "examples")
    (box / "docs" / "pictures").mkdir(parents=True)
    for name, origin in INPUTS.items():
        (box / name).parent.mkdir(parents=True, exist_ok=True)
        if origin is not None:
            shutil.copy(ROOT / origin, box / name)
    status, out = run([str(bin_dir / "turnflow"), "compile", "examples/support.flow", "-o", "flow.json"], box,
                      clean_env(bin_dir))
    if status:
        raise SystemExit(f"turnflow compile failed in the fresh environment:\n{out}")
    (box / "ci" / "turnflow.toml").write_text('ignore = ["TF205"]\nextend-exclude = ["generated"]\n')
    (box / "tasks.jsonl").write_text('{"id": "t1", "task": "I was charged twice"}\n'
                                     '{"id": "t2", "task": "it crashes"}\n')
    return box


def check_doc(doc: Path, bin_dir: Path, box: Path) -> tuple[int, int, list[str]]:
    """(shell lines run, Python blocks run, failures) for one document in its environment."""
    name, text = doc_name(doc), doc.read_text(encoding="utf-8")
    env, stdin = clean_env(bin_dir), (ROOT / "examples" / "support.flow").read_bytes()
    failures, lines, blocks = [], 0, 0
    for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = concrete(line.strip())
            if not line or line.startswith("#") or "turnflow" not in line or why_not(line) \
                    or line.startswith("python3 -m pip install -q -e"):
                continue
            lines += 1
            status, out = run(["bash", "-c", line], box, env, stdin, timeout=120)
            if status not in (0, 1) or "Traceback" in out or "internal error" in out:
                failures.append(f"{name}: `{line}` exited {status}:\n{out[-1500:]}")
    for number, code, reason in python_blocks(name, text):
        if reason:
            continue
        blocks += 1
        script = box / f"_snippet_{number}.py"
        script.write_text(PRELUDE.get(name, "") + code, encoding="utf-8")
        status, out = run([str(bin_dir / "python"), script.name], box, env, timeout=120)
        if status:
            failures.append(f"{name}:{number}: the Python block exited {status}:\n{out[-1500:]}")
    return lines, blocks, failures


def main() -> int:
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="turnflow-docs-"))
    try:
        repo = tmp / "repo"
        copy_tracked(repo)
        command = first_command()
        status, out = run(["bash", "-c", command], repo, clean_env(None))
        if status:
            print(f"README's first command `{command}` exited {status}:\n{out[-3000:]}")
            return 1
        print(f"README's first command ran on a fresh venv ({time.monotonic() - started:.0f} s)")
        cache: dict = {"wheel": wheel(repo, tmp / "wheel")}
        wanted = {doc: extras_named(doc.read_text(encoding="utf-8")) for doc in DOCS}
        with ThreadPoolExecutor(max_workers=3) as pool:  # pip mostly waits on downloads
            list(pool.map(lambda extras: environment(extras, repo, tmp / "venvs", cache), set(wanted.values())))
        print(f"{len(cache) - 1} environments with extras built ({time.monotonic() - started:.0f} s)")
        failures, total = [], [0, 0]
        for doc in DOCS:
            extras = wanted[doc]
            bin_dir = environment(extras, repo, tmp / "venvs", cache)
            box = sandbox(tmp / "box" / doc_name(doc).replace("/", "_"), bin_dir)
            lines, blocks, found = check_doc(doc, bin_dir, box)
            total[0], total[1] = total[0] + lines, total[1] + blocks
            failures += found
            print(f"{doc_name(doc)}: extras [{','.join(extras)}]: {lines} shell lines, {blocks} Python blocks"
                  f"{', ' + str(len(found)) + ' failed' if found else ''}")
        print(f"{total[0]} shell lines and {total[1]} Python blocks on {len(cache)} fresh environments "
              f"in {time.monotonic() - started:.0f} s")
        for failure in failures:
            print("\n" + failure)
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
