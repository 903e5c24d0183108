"""How a message tells a user to install one of turnflow's extras. turnflow is not on PyPI
(README.md): `pip install 'turnflow[lsp]'` would find nothing, or someone else's package of that
name, so every hint names the git URL, and the editable install for a checkout."""

from __future__ import annotations

REPOSITORY = "git+https://github.com/turnflow/turnflow"


def pip_install(extra: str) -> str:
    """`pip install 'turnflow[EXTRA] @ git+...' (in a checkout: pip install -e '.[EXTRA]')`."""
    return f"pip install 'turnflow[{extra}] @ {REPOSITORY}' (in a checkout: pip install -e '.[{extra}]')"
