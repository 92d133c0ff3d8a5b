"""Values a profile's schema must refuse rather than read as something else: a string where a list
is asked (read letter by letter), an empty value of a required number, ``true`` for a number,
and ``source``, which the loader sets and a file does not."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.profiles import load_profile


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("runs: {extensions: 'yarn:factor=4'}", "runs.extensions must be a list"),
        ("evaluation: {ruler: {lengths: 4096}}", "evaluation.ruler.lengths must be a list"),
        ("evaluation: {short: {tasks: arc_easy}}", "evaluation.short.tasks must be a list"),
        ("model: {window: null}", "model.window must be an integer, got None"),
        ("hardware: {mfu: true}", "hardware.mfu must be a number, got True"),
        ("drift: {seq_len: false}", "drift.seq_len must be an integer, got False"),
        ("source: elsewhere.yaml", "unknown key source"),
        ("hardware: {fsdp: 1}", "hardware.fsdp must be true or false, got 1"),
    ],
)
def test_a_value_of_another_kind_is_refused_in_one_line(tmp_path, body, said) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"extends: smoke\n{body}\n")
    with pytest.raises(UserError) as caught:
        load_profile(mine)
    message = str(caught.value)
    assert said in message and "\n" not in message, message


def test_a_whole_number_is_taken_where_a_number_is_asked_and_a_number_where_an_integer_is(
    tmp_path,
) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\nhardware: {gpu_tflops: 500}\ndrift: {seq_len: 512.0}\n")
    prof = load_profile(mine)
    assert prof.hardware.gpu_tflops == 500.0 and isinstance(prof.hardware.gpu_tflops, float)
    assert prof.drift.seq_len == 512 and isinstance(prof.drift.seq_len, int)


def test_the_sections_a_file_leaves_out_take_the_schemas_defaults(tmp_path) -> None:
    """Drift, the short suite and perplexity of a file that states none of them: LongReD's
    ``top_m`` of 6 over 64 brown texts of 1024 tokens in float32 on the CPU; the tiny short
    suite at the model's window; no perplexity corpus (16 windows where one is named)."""
    mine = tmp_path / "alone.yaml"
    mine.write_text("model: {name: tiny-random, window: 256}\n")
    prof = load_profile(mine)
    d = prof.drift
    assert (d.texts, d.num_texts, d.seq_len, d.top_m, d.device, d.dtype) == (
        "brown",
        64,
        1024,
        6,
        "cpu",
        "float32",
    )
    s = prof.evaluation.short
    assert (s.suite, s.limit, s.max_length, s.tasks) == ("short_tiny", None, None, None)
    assert (prof.evaluation.ppl.corpus, prof.evaluation.ppl.windows) == (None, 16)
    assert (prof.training, prof.tables, prof.about.values) == ({}, {}, {})
