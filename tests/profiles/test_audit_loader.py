"""How ``extends`` merges a profile into the one it names: a ``model.fallback`` stands in only for
the model it was stated with, a chain that comes back to a file is refused in one line, and the
keys a child gives replace its parent's (mappings key by key, lists whole)."""

from __future__ import annotations

import itertools

import pytest

from longred_bench.errors import UserError
from longred_bench.profiles import load_profile

PARENT = "name: parent\nmodel: {name: org/base, window: 256, fallback: tiny-random}\n"


def test_a_fallback_is_inherited_with_the_model_it_stands_in_for(tmp_path) -> None:
    """A child that keeps its parent's model (naming it again, or not at all) keeps the offline
    model that runs where the hub cannot give it."""
    (tmp_path / "parent.yaml").write_text(PARENT)
    (tmp_path / "same.yaml").write_text("extends: parent.yaml\nmodel: {window: 512}\n")
    (tmp_path / "again.yaml").write_text("extends: parent.yaml\nmodel: {name: org/base}\n")
    for name in ("same", "again"):
        model = load_profile(tmp_path / f"{name}.yaml").model
        assert (model.name, model.fallback) == ("org/base", "tiny-random"), name
    assert load_profile(tmp_path / "same.yaml").model.window == 512


def test_a_fallback_is_not_inherited_by_another_model(tmp_path) -> None:
    """A child naming another model does not run its parent's fallback in its place (a result
    measured on the wrong model under the new model's name)."""
    (tmp_path / "parent.yaml").write_text(PARENT)
    (tmp_path / "other.yaml").write_text("extends: parent.yaml\nmodel: {name: org/other}\n")
    model = load_profile(tmp_path / "other.yaml").model
    assert (model.name, model.fallback, model.window) == ("org/other", None, 256)


@pytest.mark.parametrize("chain", [("a",), ("a", "b"), ("a", "b", "c")])
def test_a_chain_of_extends_that_comes_back_is_refused_in_one_line(tmp_path, chain) -> None:
    names = [*chain, chain[0]]
    for this, parent in itertools.pairwise(names):
        (tmp_path / f"{this}.yaml").write_text(f"extends: {parent}.yaml\n")
    with pytest.raises(UserError) as caught:
        load_profile(tmp_path / f"{chain[0]}.yaml")
    message = str(caught.value)
    assert "extends itself" in message and "\n" not in message


def test_extends_must_name_a_profile(tmp_path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: [smoke, tiny]\n")
    with pytest.raises(UserError, match="extends must be a profile name or a path"):
        load_profile(mine)


def test_a_child_replaces_a_list_whole_and_merges_a_mapping_key_by_key(tmp_path) -> None:
    (tmp_path / "parent.yaml").write_text(
        "extends: smoke\nevaluation: {ruler: {lengths: [128, 256, 512], samples: 3}}\n"
        "runs: {overrides: {steps: 4, lr: 0.001}}\n"
    )
    (tmp_path / "child.yaml").write_text(
        "extends: parent.yaml\nevaluation: {ruler: {lengths: [64]}}\n"
        "runs: {overrides: {steps: 9}}\n"
    )
    prof = load_profile(tmp_path / "child.yaml")
    assert prof.evaluation.ruler.lengths == (64,)
    assert prof.evaluation.ruler.samples == 3
    assert prof.runs.overrides == {"steps": 9, "lr": 0.001}


def test_a_fallback_must_be_offline(tmp_path) -> None:
    """A fallback runs where the hub cannot be reached: a hub id there is refused, a zoo name or
    an existing local folder taken."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("model: {name: org/base, window: 256, fallback: org/small}\n")
    with pytest.raises(UserError, match="looks like a hub id"):
        load_profile(mine)
    (tmp_path / "small").mkdir()
    mine.write_text(f"model: {{name: org/base, window: 256, fallback: {tmp_path / 'small'}}}\n")
    assert load_profile(mine).model.fallback == str(tmp_path / "small")
    mine.write_text(f"model: {{name: org/base, window: 256, fallback: {tmp_path / 'gone'}}}\n")
    with pytest.raises(UserError, match="does not exist"):
        load_profile(mine)


def test_a_model_under_the_home_folder_is_a_local_path(tmp_path, monkeypatch) -> None:
    """``~/model`` is a local folder, as on the command line: checked to exist and keyed by its
    absolute path, not taken for a hub id."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mm").mkdir()
    mine = tmp_path / "mine.yaml"
    mine.write_text("model: {name: ~/mm, window: 256}\n")
    assert load_profile(mine).model.name == str((tmp_path / "mm").resolve())
    mine.write_text("model: {name: ~/gone, window: 256}\n")
    with pytest.raises(UserError, match="does not exist"):
        load_profile(mine)


def test_a_bad_value_is_reported_against_the_file_that_states_it(tmp_path) -> None:
    """A value refused in a profile two ``extends`` away is named in the file that wrote it
    (not in the file between, which only passes it on), and the file loaded is named too."""
    (tmp_path / "grand.yaml").write_text("extends: smoke\nmodel: {window: banana}\n")
    (tmp_path / "parent.yaml").write_text("extends: grand.yaml\nruns: {seeds: 2}\n")
    (tmp_path / "child.yaml").write_text("extends: parent.yaml\n")
    with pytest.raises(UserError) as caught:
        load_profile(tmp_path / "child.yaml")
    message = str(caught.value)
    assert message.startswith(f"profile {tmp_path / 'grand.yaml'}: model.window"), message
    assert message.endswith(f"(extended by {tmp_path / 'child.yaml'})")


def test_ruler_tasks_are_the_suites_own(tmp_path) -> None:
    """RULER tasks are named as the suite registers them (``longred_ruler_``, and lm-eval's
    NIAH as ``longred_lmeval_``); a bare name, which would select lm-eval's own task of that
    name, is refused with the name to write."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "extends: smoke\nevaluation: {ruler: {tasks: [longred_ruler_niah_single_1, "
        "longred_lmeval_niah_single_1]}}\n"
    )
    assert load_profile(mine).evaluation.ruler.tasks == (
        "longred_ruler_niah_single_1",
        "longred_lmeval_niah_single_1",
    )
    mine.write_text("extends: smoke\nevaluation: {ruler: {tasks: [ruler_niah_single_1]}}\n")
    with pytest.raises(UserError, match="write longred_ruler_niah_single_1"):
        load_profile(mine)


def test_a_profile_edited_within_the_file_systems_time_step_is_read_again(tmp_path) -> None:
    """A file rewritten with the time it had (an edit within one step of the file system's
    clock) is read again: the profile it names now, not the one read before."""
    import os

    mine = tmp_path / "mine.yaml"
    mine.write_text("model: {name: tiny-base, window: 256}\n")
    before = mine.stat().st_mtime_ns
    assert load_profile(mine).model.window == 256
    mine.write_text("model: {name: tiny-base, window: 512}\n")
    os.utime(mine, ns=(before, before))
    assert load_profile(mine).model.window == 512
