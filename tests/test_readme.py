"""The README opens with the two commands users run first; CI runs the second verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_readme_opens_with_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, flags=re.S)
    main_cmd, test_cmd = blocks[0].strip(), blocks[1].strip()
    assert "turnflow check examples/" in main_cmd
    assert readme.index(main_cmd) < readme.index(test_cmd) < readme.index("turnflow is a toolchain")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd in ci.splitlines()
