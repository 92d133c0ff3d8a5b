"""Where ``compare`` puts a unit's folder that holds records of other settings or older code
(:mod:`longred_bench.jobs.compare_units`): set aside beside it, never deleted, named by what
differs, and moved back when those settings are asked again."""

from __future__ import annotations

import json

from longred_bench.jobs import compare_units
from longred_bench.jobs.units import stored_config

UNIT = {"model": "tiny-random", "rope": None, "suite": "niah", "samples": 1}


def test_records_set_aside_say_whether_their_settings_or_their_code_differ(tmp_path) -> None:
    """The committed SmolLM2 comparison, run again after a change to the evaluation code, said
    its folders "held records of other settings" though only the code's hash differed."""
    path = tmp_path / "runs" / "original" / "niah" / "eval.jsonl"

    def saved(config):
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "config.json").write_text(json.dumps(config))
        path.write_text("{}\n")

    saved({**stored_config(UNIT), "code": "0" * 64})
    aside, held = compare_units.make_room(path, UNIT)
    assert held == compare_units.OLDER_CODE and (aside / "eval.jsonl").is_file()
    assert not path.parent.exists()  # set aside, not replaced
    saved({**stored_config(UNIT), "samples": 2})
    assert compare_units.make_room(path, UNIT)[1] == compare_units.OTHER_SETTINGS
    assert compare_units.make_room(path, UNIT) == (
        None,
        compare_units.OTHER_SETTINGS,
    )  # nothing held


def test_a_unit_set_aside_three_times_keeps_each_folder(tmp_path) -> None:
    # one settings' folder set aside again and again: `.<hash>`, `.<hash>-2`, `.<hash>-3`
    folder = tmp_path / "runs" / "original" / "niah"
    kept = []
    for i in range(3):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"samples": 1}))
        (folder / "eval.jsonl").write_text(json.dumps({"call": i}) + "\n")
        kept.append(compare_units.set_aside_unit(folder))
    assert len(set(kept)) == 3 and kept[2].name == f"{kept[0].name}-3"
    calls = [json.loads((k / "eval.jsonl").read_text())["call"] for k in kept]
    assert calls == [0, 1, 2]


def test_a_units_records_are_found_among_several_set_aside(tmp_path) -> None:
    # records of two other settings lie beside the folder; this unit's are the second found
    path = tmp_path / "runs" / "original" / "niah" / "eval.jsonl"
    for stamp, config in (("a", {**stored_config(UNIT), "samples": 2}),
                          ("b", stored_config(UNIT))):  # fmt: skip
        aside = path.parent.with_name(f"niah.{stamp}")
        aside.mkdir(parents=True)
        (aside / "config.json").write_text(json.dumps(config))
        (aside / "eval.jsonl").write_text(json.dumps({"stamp": stamp}) + "\n")
    assert compare_units.unit_records(path, UNIT) == [{"stamp": "b"}]
    assert path.is_file() and not path.parent.with_name("niah.b").exists()  # moved back


def test_records_that_do_not_read_back_are_said_to_be_damaged(tmp_path) -> None:
    """A unit folder of this very config whose records were cut short (or whose config.json
    does not parse) was said to hold "the results of older code" or "records of other
    settings"; it holds damaged records, and is set aside all the same."""
    path = tmp_path / "runs" / "original" / "niah" / "eval.jsonl"
    for config in (json.dumps(stored_config(UNIT)), '{"model": "tiny-'):
        path.parent.mkdir(parents=True)
        (path.parent / "config.json").write_text(config)
        path.write_text('{"cut')
        aside, held = compare_units.make_room(path, UNIT)
        assert held == compare_units.DAMAGED and (aside / "eval.jsonl").is_file()
        assert not path.parent.exists()
