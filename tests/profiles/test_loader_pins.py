"""How reading a profile file tells a local model path from other names: a bare file name
ending in ``.gguf`` is a local path (a missing one is refused as the file is read); a zoo name
is the zoo's model even beside a folder of that name."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.profiles.loader import load_profile


def test_a_missing_bare_gguf_model_is_refused_when_the_profile_is_read(
    tmp_path, monkeypatch
) -> None:
    """``model.name: missing.gguf`` (no ``./``) names a local file, not a hub id: the profile is
    refused in one line naming the file and the folder it was read from."""
    monkeypatch.chdir(tmp_path)
    profile = tmp_path / "mine.yaml"
    profile.write_text("extends: smoke\nmodel: {name: missing.gguf}\n")
    with pytest.raises(UserError) as caught:
        load_profile(profile)
    message = str(caught.value)
    assert message.startswith(f"profile {profile}: model.name 'missing.gguf' does not exist")
    assert f"(read from the current folder, {tmp_path})" in message


def test_a_zoo_name_is_the_zoo_model_beside_a_folder_of_that_name(tmp_path, monkeypatch) -> None:
    """A folder called ``tiny-random`` in the current folder does not turn the zoo name into a
    local path: the profile keeps naming the zoo's model."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-random").mkdir()
    profile = tmp_path / "mine.yaml"
    profile.write_text("extends: smoke\nmodel: {name: tiny-random}\n")
    assert load_profile(profile).model.name == "tiny-random"
