"""tests/pg_server.py's kept data directory (a fresh initdb output, copied for the next throw-away
server instead of running initdb again) is an optimisation only: when it cannot be made, the server
that tried carries on."""

from __future__ import annotations

import os
from types import SimpleNamespace

from pg_server import PgServer


def test_a_template_that_cannot_be_copied_is_skipped_not_an_error(tmp_path):
    """`cp` failing (here: nothing to copy, as a full disk would make it fail) used to raise
    CalledProcessError out of the server's start, though its initdb had succeeded."""
    server = SimpleNamespace(tmp=str(tmp_path / "run"), data=str(tmp_path / "run" / "no-such-data"))
    os.makedirs(server.tmp)
    template = str(tmp_path / "template")
    PgServer._publish(server, template)  # type: ignore[arg-type]
    assert not os.path.exists(template)
    assert sorted(os.listdir(tmp_path)) == ["run"]  # (the staging folder is gone too)


def test_a_template_is_published_whole(tmp_path):
    data = tmp_path / "run" / "data"
    data.mkdir(parents=True)
    (data / "PG_VERSION").write_text("16\n")
    server = SimpleNamespace(tmp=str(tmp_path / "run"), data=str(data))
    template = str(tmp_path / "template")
    PgServer._publish(server, template)  # type: ignore[arg-type]
    assert (tmp_path / "template" / "PG_VERSION").read_text() == "16\n"
