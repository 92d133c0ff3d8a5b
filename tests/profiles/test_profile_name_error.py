"""A profile whose name is not letters, digits, '.', '_' or '-' is refused in one line that says
what to do: rename the file (a profile without ``name:`` is named by it) or set ``name:``."""

from __future__ import annotations

from longred_bench.cli import main


def _error(capsys, path) -> str:
    assert main(["reproduce", "table2", "--profile", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_a_file_named_badly_is_told_to_rename_it_or_set_its_name(tmp_path, capsys) -> None:
    mine = tmp_path / "it's.yaml"
    mine.write_text("extends: smoke\n")
    err = _error(capsys, mine)
    assert "got \"it's\"; rename the file (its name is the profile's) or set `name:` in it" in err


def test_a_bad_name_key_is_told_to_change_it(tmp_path, capsys) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\nname: my profile\n")
    assert "got 'my profile'; set its `name:` to such a name" in _error(capsys, mine)


def test_a_profile_does_not_inherit_the_name_of_the_profile_it_extends(tmp_path) -> None:
    """The name labels a profile's runs and reports: a file extending one that sets ``name:``
    is named by its own ``name:``, else by its file, never by its parent's."""
    from longred_bench.profiles import load_profile

    (tmp_path / "parent.yaml").write_text("extends: smoke\nname: base-one\n")
    (tmp_path / "child.yaml").write_text("extends: parent.yaml\n")
    (tmp_path / "named.yaml").write_text("extends: parent.yaml\nname: mine\n")
    assert load_profile(tmp_path / "parent.yaml").name == "base-one"
    assert load_profile(tmp_path / "child.yaml").name == "child"
    assert load_profile(tmp_path / "named.yaml").name == "mine"


def test_an_edited_parent_profile_is_read_again(tmp_path) -> None:
    """Profiles are kept per file and modification time: a child read again after the file it
    extends was edited kept the parent's old values (a long-lived process, a notebook)."""
    import os

    from longred_bench.profiles import load_profile

    parent, child = tmp_path / "parent.yaml", tmp_path / "child.yaml"
    parent.write_text("extends: smoke\nruns: {seeds: 2}\n")
    child.write_text("extends: parent.yaml\n")
    assert load_profile(child).runs.seeds == 2
    parent.write_text("extends: smoke\nruns: {seeds: 5}\n")
    stat = parent.stat()  # a later modification time, however coarse the file system's clock
    os.utime(parent, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert load_profile(child).runs.seeds == 5
