"""transformers' LOAD REPORT around a model the suite loads
(:mod:`longred_bench.models.load_report`): a config giving tensors other shapes than the weight
files hold is refused in one line (it was the report, then a traceback); the report is not said
before the suite's own refusal of missing tensors; a load the suite takes still says it (unused
tensors in the files)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from longred_bench.errors import UserError
from longred_bench.models.load_report import mismatch_error
from longred_bench.models.loading import load


@pytest.fixture
def reports() -> Iterator[list[str]]:
    """The LOAD REPORT messages transformers logs while the test runs."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "LOAD REPORT" in record.getMessage():
                said.append(record.getMessage())

    logger, handler = logging.getLogger("transformers.modeling_utils"), Keep()
    logger.addHandler(handler)
    yield said
    logger.removeHandler(handler)


def _edit_weights(folder: Path, edit) -> None:
    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    edit(tensors)
    save_file(tensors, weights, metadata={"format": "pt"})


def test_a_config_of_other_tensor_shapes_is_refused_in_one_line(saved_tiny, reports) -> None:
    """A config.json whose MLP is twice the width of the weights: one line naming a tensor and
    both shapes, where a RuntimeError's traceback followed the report."""
    config = json.loads((saved_tiny / "config.json").read_text())
    width = config["intermediate_size"]
    config["intermediate_size"] = 2 * width
    (saved_tiny / "config.json").write_text(json.dumps(config))
    hidden = config["hidden_size"]
    with pytest.raises(UserError) as refused:
        load(str(saved_tiny))
    line = str(refused.value)
    assert line.startswith(f"model {str(saved_tiny)!r}: its weight files hold tensors of other "
                           "shapes than its config.json gives them (model.layers.")  # fmt: skip
    assert any(f"[{a}, {b}] in the files, [{2 * a if a == width else a}, "
               f"{2 * b if b == width else b}] by the config" in line
               for a, b in ((width, hidden), (hidden, width)))  # fmt: skip
    assert line.endswith("; and 2 more): give the folder whose config.json its weights were "
                         "saved with")  # fmt: skip
    assert reports == []


def test_missing_tensors_are_refused_without_the_report_before(saved_tiny, reports) -> None:
    """The suite's line on tensors missing from the files came after transformers' table of
    them; that table is not said now."""
    _edit_weights(saved_tiny, lambda t: t.pop("model.layers.0.mlp.down_proj.weight"))
    with pytest.raises(UserError, match=r"lack 1 tensor\(s\) its config\.json names"):
        load(str(saved_tiny))
    assert reports == []


def test_a_load_the_suite_takes_still_says_the_report(saved_tiny, reports) -> None:
    """A tensor in the files that the model does not use: the model loads, and transformers'
    report of it is said once."""
    _edit_weights(saved_tiny, lambda t: t.update({"extra.weight": torch.zeros(2)}))
    assert load(str(saved_tiny)).model is not None
    assert len(reports) == 1 and "extra.weight" in reports[0]


def test_a_report_without_shapes_still_names_the_tensor() -> None:
    """A narrow terminal's report has no details column: the line names the tensor alone."""
    report = ("\x1b[1mLlamaForCausalLM LOAD REPORT\x1b[0m from: x\nKey | Status |  | \n"
              "----+--------+--+-\nlm_head.weight | \x1b[31mMISMATCH\x1b[0m |  | \n")  # fmt: skip
    line = str(mismatch_error("x", report))
    assert "gives them (lm_head.weight): give the folder" in line
    assert "gives them: give" in str(mismatch_error("x", "no table"))
