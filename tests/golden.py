"""Golden-file helper: compare `actual` with the file, or rewrite it with --update-goldens."""

from pathlib import Path


def check_golden(path: Path, actual: str, update: bool) -> None:
    if update or not path.exists():
        if not update:
            raise AssertionError(f"missing golden {path}; run pytest --update-goldens to create it")
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path} differs (run pytest --update-goldens if the change is intended)"
