"""The values a profile file may give that its schema's types cannot judge
(:func:`longred_bench.reproduce.profile_views.checked_profile`): which devices, dtypes and
counts pass and which are refused in one line naming the key, a table's own evaluation
backend for dynamic RoPE, ``null`` in an ``overrides`` section against a recipe's own section,
and what ``profiles new`` writes into a copy."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longred_bench.errors import UserError
from longred_bench.reproduce.profile_views import checked_profile, new_profile


def _profile(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(f"extends: smoke\n{body}\n")
    return path


@pytest.mark.parametrize(
    "body",
    [
        "hardware: {device: 'cuda:1'}",
        "drift: {device: 'cuda:0'}",
        "evaluation: {device: 'cuda:2'}",
        "drift: {top_m: 0}",
        "hardware: {dtype: auto}",
        "drift: {dtype: float64}",
        "hardware: {dtype: float64}",
        "runs: {overrides: {long_data: null}}",
        "tables: {table3: {overrides: {lr: null}}}",
        "training: {longred: {longred: {a1: 2.0}}}",
        "tables: {pcd: {ropes: [none, 'pi:factor=4']}}",
    ],
)
def test_values_the_suite_takes_pass(tmp_path: Path, body: str) -> None:
    """A numbered CUDA device, no drift ``top_m``, ``auto`` and float64 where allowed, ``null``
    giving up an override, a method group and PCD's ``none`` line are all a profile's own."""
    assert checked_profile(_profile(tmp_path, body)).name == "mine"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("drift: {dtype: auto}",
         "drift.dtype 'auto' is not one of float32, bfloat16, float16, float64"),
        ("hardware: {dtype: int8}",
         "hardware.dtype 'int8' is not one of auto, float32, bfloat16, float16, float64"),
        ("drift: {device: gpu}", "drift.device 'gpu' is no device: use auto, cpu or cuda[:N]"),
        ("evaluation: {device: 'cuda:x'}",
         "evaluation.device 'cuda:x' is no device: use auto, cpu or cuda[:N]"),
        ("drift: {top_m: -1}", "drift.top_m must be at least 0, not -1"),
        ("drift: {num_texts: 0}", "drift.num_texts must be at least 1, not 0"),
        ("evaluation: {ppl: {windows: 0}}", "evaluation.ppl.windows must be at least 1, not 0"),
        ("evaluation: {batch_size: 0}", "evaluation.batch_size must be at least 1, not 0"),
        ("evaluation: {short: {suite: ruler}}",
         "evaluation.short.suite 'ruler' is not one of short, short_tiny, paper_short"),
        ("evaluation: {backend: jax}", "evaluation.backend 'jax' is not one of"),
        ("evaluation: {ppl: {corpus: nope}}",
         "evaluation.ppl.corpus: text source 'nope' is neither a corpus"),
        ("tables: {table3: {evaluation: {ruler: {samples: 0}}}}",
         "tables.table3.evaluation.ruler.samples must be at least 1, not 0"),
        ("training: {cpt: {lr: null}}", "training.cpt.lr must be a number, got None"),
        ("model: {fallback: tiny-bse}",
         "model.fallback: model 'tiny-bse' is not a zoo name or a local path (did you mean "
         "tiny-base?)"),
        ("model: {name: tiny-bse, fallback: null}",
         "model.name: model 'tiny-bse' is not a zoo name or a local path"),
        ("training: {cpt: {rope: 'pi:factor=0.5'}}",
         "training.cpt.rope: RoPE spec 'pi:factor=0.5': factor must be > 1"),
        ("tables: {table3: {evaluation: {backend: vllm}, extensions: ['dynamic:factor=2']}}",
         "tables.table3.extensions[0]: dynamic:factor=2 is dynamic RoPE, which the vllm backend"),
        ("evaluation: {backend: vllm}\nruns: {extensions: ['dynamic:factor=2']}",
         "runs.extensions[0]: dynamic:factor=2 is dynamic RoPE, which the vllm backend"),
    ],
)  # fmt: skip
def test_values_the_suite_cannot_take_are_one_line_naming_the_key(
    tmp_path: Path, body: str, message: str
) -> None:
    """Each refusal names the file and the key path, in one line."""
    path = _profile(tmp_path, body)
    with pytest.raises(UserError) as got:
        checked_profile(path)
    assert str(got.value).startswith(f"profile {path}: {message}"), str(got.value)
    assert "\n" not in str(got.value)


def test_a_tables_own_hf_backend_lets_it_run_dynamic_rope_under_a_vllm_profile(
    tmp_path: Path,
) -> None:
    """The backend that evaluates a table's extensions is its own where it sets one."""
    body = ("evaluation: {backend: vllm}\ntables: {table3: {evaluation: {backend: hf}, "
            "extensions: ['dynamic:factor=2']}}")  # fmt: skip
    assert checked_profile(_profile(tmp_path, body)).tables["table3"]["evaluation"] == {
        "backend": "hf"
    }


def test_a_copy_of_a_file_extending_nothing_keeps_its_comments_less_its_name(
    tmp_path: Path,
) -> None:
    """``profiles new`` of such a file copies its text (comments kept) with no ``name:`` line,
    into a folder it makes, so the copy is named after its own file."""
    source = tmp_path / "base.yaml"
    source.write_text("name: base\n# the model\nmodel: {name: tiny-random, window: 256}\n")
    out = tmp_path / "deeper" / "folder" / "copy.yaml"
    assert new_profile(str(source), out) == out
    text = out.read_text()
    assert "# the model\nmodel: {name: tiny-random, window: 256}\n" in text
    assert "name: base" not in text and yaml.safe_load(text)["model"]["name"] == "tiny-random"


def test_a_copy_of_a_file_that_extends_another_holds_its_resolved_keys_without_a_name(
    tmp_path: Path,
) -> None:
    """A file that extends another is copied as its resolved keys, less its ``name``."""
    out = tmp_path / "copy.yaml"
    new_profile(str(_profile(tmp_path, "runs: {seeds: 2}")), out)
    data = yaml.safe_load(out.read_text())
    assert "name" not in data and "extends" not in data and data["runs"]["seeds"] == 2
    assert data["model"]["name"] == checked_profile("smoke").model.name


def test_a_copy_of_a_profile_the_checks_refuse_is_not_written(tmp_path: Path) -> None:
    """The source is checked as ``reproduce`` checks it before anything is written."""
    out = tmp_path / "copy.yaml"
    with pytest.raises(UserError, match=r"drift\.top_m must be at least 0"):
        new_profile(str(_profile(tmp_path, "drift: {top_m: -1}")), out)
    assert not out.exists()


def test_show_raises_a_single_refused_table_section_as_its_own_error(tmp_path: Path) -> None:
    """One table section the table refuses is that table's one-line error, not a count."""
    from longred_bench.reproduce.profile_views import show_profile

    path = _profile(tmp_path, "tables: {table3: {rows: [control, nope]}}")
    with pytest.raises(UserError) as got:
        show_profile(str(path))
    assert str(got.value).startswith("table3 cannot run at profile mine")
    assert "unknown row 'nope'" in str(got.value)


def test_a_copy_whose_stem_cannot_name_a_profile_is_not_written(tmp_path: Path) -> None:
    """The copy's stem names the profile: characters a name cannot hold are refused first."""
    out = tmp_path / "my copy!.yaml"
    with pytest.raises(UserError, match="the file's stem names the profile; use letters"):
        new_profile("smoke", out)
    assert not out.exists()


def test_show_refuses_a_training_value_every_run_of_a_recipe_refuses(tmp_path: Path) -> None:
    """A training value no run can take is the run's one-line error, as ``reproduce`` gives."""
    from longred_bench.reproduce.profile_views import show_profile

    path = _profile(tmp_path, "training: {cpt: {short_len: 0}}")
    with pytest.raises(UserError) as got:
        show_profile(str(path))
    assert str(got.value).startswith(f"profile {path}: the cpt run at ")
    assert "config short_len must be >= 1 (got 0) (set under training.cpt" in str(got.value)
