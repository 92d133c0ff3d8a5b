"""How a profile's ``model.name`` and ``model.fallback`` are read: a local path (``./m``, or a bare
name that is a folder of the current one) made absolute from the folder the profile is read in,
a zoo name always the zoo's model."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("key", ["name", "fallback"])
def test_a_relative_model_path_names_one_model_per_folder(tmp_path, monkeypatch, key):
    """``model.name: ./mm`` (or ``model.fallback``) is read from the current folder, as on the
    command line, and kept absolute: the same profile run from two folders names two models
    (and two cache keys), never one model's results for the other."""
    from longred_bench.profiles.loader import load_profile

    profile = tmp_path / "rel.yaml"
    model = "{name: ./mm}" if key == "name" else "{name: org/base, fallback: ./mm}"
    profile.write_text(f"extends: smoke\nname: rel\nmodel: {model}\n")
    names = []
    for folder in ("a", "b"):
        (tmp_path / folder / "mm").mkdir(parents=True)
        monkeypatch.chdir(tmp_path / folder)
        names.append(getattr(load_profile(profile).model, key))
    assert names == [str(tmp_path / "a" / "mm"), str(tmp_path / "b" / "mm")]


@pytest.mark.parametrize("spelled", ["mm", "models/mm"])
def test_a_model_folder_named_without_dot_slash_is_a_local_path(tmp_path, monkeypatch, spelled):
    """``model.name: mm`` or ``models/mm``, an existing folder of the current one, is that folder
    as on the command line (``eval --model mm``): kept absolute, so its units share their keys
    with ``./mm``'s and a call from another folder names the same model; it was left as written,
    taken for a hub id wherever the folder was not, and keyed apart from ``./mm``."""
    from longred_bench.profiles.loader import load_profile

    (tmp_path / "models" / "mm").mkdir(parents=True)
    (tmp_path / "mm").mkdir()
    monkeypatch.chdir(tmp_path)
    profile = tmp_path / "bare.yaml"
    profile.write_text(f"extends: smoke\nmodel: {{name: {spelled}, fallback: {spelled}}}\n")
    model = load_profile(profile).model
    assert model.name == model.fallback == str(tmp_path / spelled)


def test_a_zoo_name_stays_the_zoo_model_beside_a_folder_of_that_name(tmp_path, monkeypatch):
    """``tiny-base`` in a profile is the zoo's model where the current folder holds a folder
    named ``tiny-base`` (a copy made with ``models --path``, say), as ``eval --model tiny-base``
    is; the profiles layer's zoo names are the models layer's."""
    import longred_bench.jobs  # noqa: F401  (registers tiny-base's builder)
    from longred_bench.models.names import zoo_names
    from longred_bench.profiles.loader import ZOO_NAMES, load_profile

    assert sorted(ZOO_NAMES) == sorted(zoo_names())
    for name in ZOO_NAMES:
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_profile("tiny").model.name == "tiny-base"
    assert load_profile("smol").model.fallback == "smollm2-135m"
    mine = tmp_path / "zoo.yaml"
    mine.write_text("extends: smoke\nmodel: {name: tiny-random}\n")
    assert load_profile(mine).model.name == "tiny-random"
