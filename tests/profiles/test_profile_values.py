"""What a profile file's values become: the defaults of a file that extends nothing, numbers YAML
reads as strings, the inclusive upper bound of a range, sections that must be mappings, an
empty file, a missing ``.yml`` parent, names that could not name a folder of their own (a relative
fallback: ``tests/reproduce/test_user_profile.py``); and the errors that point a user at what
they meant: the folder a missing relative model path was read from, ``my`` for ``my.yml``, a
built-in profile's name taken by a file, a profile file's suffix."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.profiles import load_profile


def _refused(path, body: str) -> str:
    path.write_text(body)
    with pytest.raises(UserError) as caught:
        load_profile(path)
    return str(caught.value)


def test_a_profile_that_extends_nothing_takes_the_documented_defaults(tmp_path) -> None:
    """A file of its own (no ``extends``) gets the schema's stated defaults: one process on the
    device ``auto`` picks, one seed, the H100 figures of the dry-run's estimates, RULER through
    transformers on the CPU."""
    mine = tmp_path / "alone.yaml"
    mine.write_text("model: {name: tiny-random, window: 256}\n")
    prof = load_profile(mine)
    hw = prof.hardware
    assert (hw.device, hw.dtype, hw.nproc_per_node, hw.fsdp) == ("auto", "auto", 1, False)
    assert (hw.gpu_tflops, hw.mfu, hw.gpu_memory_gib) == (989.0, 0.35, 80.0)
    assert (prof.runs.seeds, prof.runs.extensions, prof.runs.overrides) == (1, (), {})
    ev = prof.evaluation
    assert (ev.device, ev.backend, ev.batch_size) == ("cpu", "hf", 8)
    assert (ev.ruler.lengths, ev.ruler.samples, ev.ruler.phrasing) == ((4096, 8192), 10,
                                                                      "standard")  # fmt: skip
    assert prof.model.layers is None and prof.model.fallback is None


def test_an_mfu_of_one_is_at_the_ranges_inclusive_bound(tmp_path) -> None:
    """``mfu`` must lie above 0 and at most 1: 1 itself (full utilisation) is a value, not an
    error."""
    mine = tmp_path / "full.yaml"
    mine.write_text("extends: smoke\nhardware: {mfu: 1}\n")
    assert load_profile(mine).hardware.mfu == 1.0


def test_a_number_yaml_reads_as_a_string_is_taken_as_a_number(tmp_path) -> None:
    """YAML 1.1 reads ``1e3`` (no dot) as a string: a hardware figure so written is the number
    it says; a word is still refused, naming the key."""
    mine = tmp_path / "sci.yaml"
    mine.write_text("extends: smoke\nhardware: {gpu_tflops: 1e3, gpu_memory_gib: 8e1}\n")
    hw = load_profile(mine).hardware
    assert (hw.gpu_tflops, hw.gpu_memory_gib) == (1000.0, 80.0)
    message = _refused(mine, "extends: smoke\nhardware: {gpu_tflops: lots}\n")
    assert message == f"profile {mine}: hardware.gpu_tflops must be a number, got 'lots'"


@pytest.mark.parametrize(
    ("body", "message"),
    [("training: {cpt: 5}", "training.cpt must be a mapping, got 5"),
     ("tables: {table3: [cpt]}", "tables.table3 must be a mapping, got ['cpt']"),
     ("about: {values: {model.name: 5}}", "about.values.model.name must be a string, got 5")],
)  # fmt: skip
def test_the_values_of_a_mapping_section_are_checked_by_type(tmp_path, body, message) -> None:
    """A recipe's or a table's section is itself a mapping, and ``about.values`` maps key paths
    to words: a value of another type is refused by its key path, not passed on."""
    mine = tmp_path / "typed.yaml"
    assert _refused(mine, f"extends: smoke\n{body}\n") == f"profile {mine}: {message}"


def test_an_empty_profile_file_is_a_profile_with_no_keys(tmp_path) -> None:
    """An empty file (or one of comments only) holds no keys: it is refused for the key it
    lacks, not as a file holding something other than a mapping."""
    mine = tmp_path / "empty.yaml"
    for body in ("", "# to fill in\n"):
        assert _refused(mine, body) == f"profile {mine}: model is required"


def test_a_missing_yml_parent_is_said_to_be_missing(tmp_path) -> None:
    """``extends: base.yml`` where no such file is: "no such file", as for ``.yaml``, not that
    the name is neither a built-in profile nor a YAML file."""
    mine = tmp_path / "child.yaml"
    message = _refused(mine, "extends: base.yml\n")
    assert message.startswith(f"{mine}: extends 'base.yml': no such file ({tmp_path / 'base.yml'})")


@pytest.mark.parametrize("name", ["..", ".hidden", "-x", "_x", ""])
def test_a_name_must_start_with_a_letter_or_digit(tmp_path, name) -> None:
    """The name is the profile's reports folder (``reports/<name>``): ``..`` would write them
    over ``reports/``' parent, ``.hidden`` out of sight, ``""`` into ``reports/`` itself."""
    mine = tmp_path / "mine.yaml"
    message = _refused(mine, f"extends: smoke\nname: '{name}'\n")
    assert message.startswith(f"profile {mine}: name must be letters, digits, '.', '_' or '-', "
                              f"got {name!r}; set its `name:`")  # fmt: skip


def test_a_missing_relative_model_path_names_the_folder_it_was_read_from(tmp_path, monkeypatch):
    """A relative ``model.name`` is read from the current folder, not the file's: where it is
    missing, the error names that folder (a user runs from elsewhere than the file's folder);
    an absolute path needs no such word."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    message = _refused(tmp_path / "mine.yaml", "extends: smoke\nmodel: {name: ./mymodel}\n")
    assert f"'./mymodel' does not exist (read from the current folder, {tmp_path / 'here'});" in (
        message
    )
    absolute = _refused(tmp_path / "abs.yaml", f"extends: smoke\nmodel: {{name: {tmp_path}/m}}\n")
    assert f"'{tmp_path}/m' does not exist; give a Hugging Face folder" in absolute


@pytest.mark.parametrize(
    ("model", "key", "said"),
    [
        ("{name: ./gone, window: 256}", "model.name", "'./gone' does not exist"),
        ("{name: org/base, fallback: ./gone}", "model.fallback", "'./gone' does not exist"),
        ("{name: org/base, fallback: org/other}", "model.fallback", "looks like a hub id"),
    ],
)
def test_a_model_path_refused_in_a_file_another_extends_is_named_at_that_file(
    tmp_path, monkeypatch, model, key, said
) -> None:
    """As any value refused in a parent file: the error names the file that sets the key and
    the file that extends it (it named the child, which sets no model at all)."""
    monkeypatch.chdir(tmp_path)
    parent = tmp_path / "parent.yaml"
    parent.write_text(f"extends: smoke\nmodel: {model}\n")
    child = tmp_path / "child.yaml"
    message = _refused(child, "extends: parent.yaml\nruns: {seeds: 2}\n")
    assert message.startswith(f"profile {parent}: {key} ") and said in message, message
    assert message.endswith(f" (extended by {child})"), message
    assert _refused(parent, parent.read_text()).startswith(f"profile {parent}: {key} ")
    assert "extended by" not in _refused(parent, parent.read_text())


def test_a_profile_named_without_its_suffix_or_mistyped_is_pointed_at_the_one_meant(
    tmp_path, monkeypatch
) -> None:
    """``--profile my`` beside ``my.yml`` names that file, ``tny`` the built-in ``tiny``; a name
    close to neither gets no guess."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yml").write_text("extends: smoke\n")
    for spec, meant in (("my", "(did you mean my.yml?)"), ("tny", "(did you mean tiny?)")):
        with pytest.raises(UserError, match=r"neither a built-in profile") as caught:
            load_profile(spec)
        assert f"nor a YAML file {meant}; " in str(caught.value)
    with pytest.raises(UserError) as caught:
        load_profile("nothing_like_it")
    assert "did you mean" not in str(caught.value)


def test_profiles_new_takes_either_yaml_suffix_and_names_both_when_refusing(tmp_path) -> None:
    """``.yml`` is a profile file as ``.yaml`` is (both load); another suffix is refused in a
    line naming both, and nothing is written."""
    from longred_bench.reproduce.profile_views import new_profile

    assert load_profile(new_profile("smoke", tmp_path / "mine.yml")).name == "mine"
    with pytest.raises(UserError, match=r"a profile is a \.yaml \(or \.yml\) file"):
        new_profile("smoke", tmp_path / "mine.json")
    assert not (tmp_path / "mine.json").exists()


def test_a_user_profile_cannot_take_a_builtin_name(tmp_path):
    """Its reports would replace the built-in profile's (reports/tiny/...)."""
    named = tmp_path / "mine.yaml"
    named.write_text("extends: smoke\nname: tiny\n")
    with pytest.raises(UserError, match=r"'tiny' is a built-in profile's, whose reports it would"):
        load_profile(named)
    stem = tmp_path / "smol.yaml"
    stem.write_text("extends: smoke\n")
    with pytest.raises(UserError, match=r"its name 'smol' is a built-in profile's"):
        load_profile(stem)
    assert load_profile("tiny").name == "tiny"  # the built-in one itself
    with pytest.raises(UserError, match=r"no such file"):
        load_profile(tmp_path / "nosuch.yaml")
