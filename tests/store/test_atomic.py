"""Files written whole or not at all (store.atomic): a signal at any moment of a write, even
right after the temporary file is created, leaves neither a temporary nor half a file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from nslb_cli.store.atomic import atomic_write, atomic_write_bytes


def test_a_signal_at_any_moment_of_a_write_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C raised in the middle of each system call of one write (the file created,
    written, renamed): the old file stays (or the new one, once renamed), and no temporary
    is left behind."""
    target = tmp_path / "seed=1.csv"
    for name in ("open", "fsync", "replace"):
        target.write_bytes(b"old\n")
        real = getattr(os, name)

        def then_interrupted(*args: object, real=real, **kwargs: object) -> object:  # noqa: ANN001
            real(*args, **kwargs)  # the call does its work, then the signal's exception comes
            raise KeyboardInterrupt

        monkeypatch.setattr(os, name, then_interrupted)
        with pytest.raises(KeyboardInterrupt):
            atomic_write_bytes(target, b"new\n")
        monkeypatch.undo()
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == ["seed=1.csv"], (name, left)
        assert target.read_bytes() == (b"new\n" if name == "replace" else b"old\n"), name


def test_a_taken_temporary_name_is_left_to_its_owner_and_a_failed_write_to_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one ``FileExistsError`` that is not ours comes from creating the temporary (its
    name taken): that file stays. The same error from the writer's own work removes ours."""
    target = tmp_path / "seed=1.csv"
    taken = tmp_path / f".seed=1.csv.{os.getpid()}.abc.tmp"
    taken.write_bytes(b"another writer's\n")
    monkeypatch.setattr(secrets, "token_hex", lambda size: "abc")
    with pytest.raises(FileExistsError):
        atomic_write_bytes(target, b"new\n")
    assert taken.read_bytes() == b"another writer's\n"
    taken.rename(tmp_path / "taken")  # the next temporary's name is free

    def fails(handle: object) -> None:
        raise FileExistsError("the writer's own work failed so")

    with pytest.raises(FileExistsError):
        atomic_write(target, fails)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
