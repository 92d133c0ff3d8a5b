"""What reading a profile file checks of a model named by a ``.gguf`` file: a bare file name
ending in ``.gguf`` is a local path, so a missing one is refused as the file is read."""

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
