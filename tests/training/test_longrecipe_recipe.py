"""The ``longrecipe`` recipe: its config keys, sentence selection by anchor types, the replay
stage and its learning rate, the merge with the original, and anchors measured for the run's own
model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training as train
from longred_bench.training.build import schedule_factor
from longred_bench.training.config import resolve_config


def test_longrecipe_config_replay_rate_and_bad_keys() -> None:
    cfg = smoke("longrecipe", steps=4, replay_steps=2, lr=1e-3, replay_lr=1e-4)
    assert [schedule_factor(cfg, s, 6) for s in range(6)] == [1, 1, 1, 1, 0.1, 0.1]
    tiny = resolve_config("longrecipe", profile="tiny")
    assert tiny.anchors == ("measured",) and tiny.keep_other == 0.5
    assert tiny.to_dict()["anchors"] == ["measured"] and "impact_steps" not in tiny.to_dict()
    with pytest.raises(UserError, match="measured\\] stands alone"):
        smoke("longrecipe", anchors=["measured", "digit"])
    with pytest.raises(UserError, match="anchors='verb' is not one of"):
        smoke("longrecipe", anchors=["verb"])
    with pytest.raises(UserError, match="below 1 only with anchors"):
        smoke("longrecipe", keep_other=0.5)
    with pytest.raises(UserError, match="replay_lr > 0 with replay steps"):
        smoke("longrecipe", replay_lr=0.0)
    with pytest.raises(UserError, match="are for recipe longrecipe, not cpt"):
        smoke("cpt", anchors=["digit"])
    for key in ("anchors", "keep_other", "replay_steps", "replay_lr"):
        assert key not in smoke("cpt").to_dict()


def test_sentence_selection_keeps_anchor_sentences(request: pytest.FixtureRequest) -> None:
    from data_helpers import ensure_cached

    from longred_bench.models.zoo import byte_tokenizer
    from longred_bench.training.data import corpus_windows, selected_windows

    ensure_cached(request, "austen")
    tok = byte_tokenizer()
    everything = corpus_windows(tok, "austen", 256)
    digits = selected_windows(tok, "austen", 256, ("digit",), 0.0, seed=0)
    halves = selected_windows(tok, "austen", 256, ("pronoun",), 0.5, seed=0)
    assert 0 < len(digits) < len(halves) < len(everything)
    text = tok.decode(digits[0].tolist())
    assert any(c.isdigit() for c in text)
    assert torch.equal(halves, selected_windows(tok, "austen", 256, ("pronoun",), 0.5, seed=0))
    with pytest.raises(UserError, match="left no 100000-token window"):
        selected_windows(tok, "austen", 100_000, ("digit",), 0.0, seed=0)


def test_sentence_selection_keeps_the_retrieval_member(request: pytest.FixtureRequest) -> None:
    """``austen+retrieval`` under selection: the selected prose windows, then retrieval rows as
    ``retrieval_fraction`` of all rows (right-padded, so their masks end in False)."""
    from data_helpers import ensure_cached

    from longred_bench.models.zoo import byte_tokenizer
    from longred_bench.training.data import selected_windows, window_set

    ensure_cached(request, "austen", "brown")
    tok = byte_tokenizer()
    prose = selected_windows(tok, "austen", 256, ("digit",), 0.0, seed=3)
    ids, mask = window_set(
        tok, "austen+retrieval", 256, seed=3, retrieval_fraction=0.25,
        selection=(("digit",), 0.0),
    )  # fmt: skip
    assert torch.equal(ids[: len(prose)], prose) and mask[: len(prose)].all()
    extra = len(ids) - len(prose)
    assert extra == round(len(prose) * 0.25 / 0.75) > 0
    assert not mask[len(prose) :].all(dim=1).all()  # retrieval rows are right-padded


@pytest.mark.integration
def test_longrecipe_replays_then_merges_with_the_original(tmp_path: Path) -> None:
    from longred_bench.models.loading import load

    out = tmp_path / "lr"
    cfg = smoke("longrecipe", steps=2, replay_steps=2, merge_weight=0.0, lr=1e-2, replay_lr=1e-3)
    final = train(cfg, out, progress=False)
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [("ce_long" in r, "ce_replay" in r) for r in records] == [
        (True, False),
        (True, False),
        (False, True),
        (False, True),
    ]
    assert [r["lr"] for r in records] == [1e-2, 1e-2, 1e-3, 1e-3]
    # merge_weight 0: the saved weights are the original's, under the extended RoPE.
    merged = load(str(final)).model
    original = load("tiny-random").model.state_dict()
    assert all(torch.equal(t, original[k]) for k, t in merged.state_dict().items())
    assert merged.config.max_position_embeddings == 1024


@pytest.mark.integration
def test_longrecipe_measures_its_anchors_then_selects(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """anchors=[measured]: a brief cpt run, the logit-change lifts per word type, the anchors
    from them in run.json and impact.json; a resumed run reads the measurement back."""
    from data_helpers import ensure_cached

    from longred_bench.training.anchors import IMPACT

    ensure_cached(request, "austen")
    cfg = smoke("longrecipe", long_data="austen", anchors=["measured"], keep_other=0.5,
                 steps=2, replay_steps=0, impact_steps=1)  # fmt: skip
    out = tmp_path / "m"
    train(cfg, out, progress=False)
    impact = json.loads((out / IMPACT).read_text())
    assert set(impact["lifts"]) >= {"numeral", "pronoun", "other"}
    assert impact["brief_steps"] == 1 and impact["brief_len"] == 1024 and impact["windows"] > 0
    # The brief run reads about the long stage's share of a step (3/4 of 2,048) in whole rows.
    assert impact["brief_tokens"] == 2048 and impact["brief_seconds"] > 0
    assert impact["measure_peak_memory_mib"] > 0  # the measurement's own peak, not the run's
    on_gpu = torch.cuda.is_available()  # the smoke profile's device: auto
    assert impact["measure_peak_memory_kind"] == ("CUDA allocator" if on_gpu else "process RSS")
    assert all(impact["lifts"][a] > 1 for a in impact["anchors"])
    assert json.loads((out / "run.json").read_text())["impact"] == impact
    assert (out / "impact" / "final" / "config.json").is_file()
    # A run interrupted before its first checkpoint, then started with another config: its
    # measurement (of the old config) was used for the new one; now it is set aside, never
    # deleted, and this config's anchors measured.
    import shutil

    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(out / IMPACT, other / IMPACT)
    shutil.copytree(out / "impact", other / "impact")
    changed = cfg.replace(impact_steps=2)
    train(changed, other, progress=False)
    again = json.loads((other / IMPACT).read_text())
    assert again["brief_steps"] == 2 and again["config"] != impact["config"]
    tag = impact["config"][:12]
    assert json.loads((other / f"impact.{tag}.json").read_text()) == impact
    assert (other / f"impact.{tag}" / "final" / "config.json").is_file()
    # Settings changed back and forth on an interrupted run: each measurement is moved back, not
    # measured again (the second switch crashed: "Directory not empty"); the run's own settings
    # (keep_other, steps) are no other measurement.
    from longred_bench.training.anchors import measure_anchors

    def measured_again(*args, **kwargs):
        raise AssertionError("the anchors were measured again")

    switch = tmp_path / "switch"
    shutil.copytree(other, switch, ignore=lambda folder, names: [
        n for n in names if folder == str(other) and not n.startswith("impact")])  # fmt: skip
    assert measure_anchors(cfg, switch, train=measured_again, progress=False) == impact
    assert json.loads((switch / f"impact.{again['config'][:12]}.json").read_text()) == again
    assert not (switch / f"impact.{tag}.json").exists()
    for _ in range(2):
        assert measure_anchors(changed, switch, train=measured_again, progress=False) == again
        assert measure_anchors(cfg, switch, train=measured_again, progress=False) == impact
    # nor the settings the brief run does not read (checkpoints kept, the final merge's weight)
    looser = cfg.replace(keep_other=0.9, steps=3, keep_checkpoints=1, merge_weight=0.3)
    assert measure_anchors(looser, switch, train=measured_again, progress=False) == impact


def _brief_folder(folder: Path, brief) -> None:
    import yaml

    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(brief.to_dict()))


def _steps(folder: Path) -> int:
    import yaml

    return yaml.safe_load((folder / "config.yaml").read_text())["steps"]


def test_a_brief_run_of_another_config_is_set_aside_and_each_comes_back(tmp_path: Path) -> None:
    """What another config left in ``impact/`` is set aside even without its ``impact.json`` (a
    run killed during its measurement: its next config tried to resume it, "holds a run of
    another config"); a measurement moved back brings its brief run, the other's set aside (it
    stayed aside, and the next switch filed the other's run under its name)."""
    from longred_bench.training.anchors import IMPACT, _settled, brief_config, brief_key

    a, b = smoke("longrecipe", impact_steps=1), smoke("longrecipe", impact_steps=2)
    brief_a, brief_b = brief_config(a, 1024), brief_config(b, 1024)
    key_a, key_b = brief_key(brief_a), brief_key(brief_b)
    tag_a, tag_b = f"impact.{key_a[:12]}", f"impact.{key_b[:12]}"
    out = tmp_path / "run"
    _brief_folder(out / "impact", brief_b)  # b killed during its measurement
    assert _settled(out, key_a, a, brief_a, progress=False) is None
    assert not (out / "impact").exists() and (out / tag_b / "config.yaml").is_file()
    # a measured (by hand here), then b again: a's set aside, b's brief run back to resume
    _brief_folder(out / "impact", brief_a)
    impact_a = {"anchors": ["digit"], "config": key_a}
    (out / IMPACT).write_text(json.dumps(impact_a))
    assert _settled(out, key_b, b, brief_b, progress=False) is None
    assert (out / tag_a / "config.yaml").is_file() and (out / f"{tag_a}.json").is_file()
    assert not (out / tag_b).exists() and _steps(out / "impact") == 2
    # back to a: b's run aside again, a's measurement and its brief run back together
    assert _settled(out, key_a, a, brief_a, progress=False) == impact_a
    assert _steps(out / "impact") == 1
    assert (out / tag_b / "config.yaml").is_file() and not (out / tag_a).exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(["impact", IMPACT, tag_b])


def test_a_measurement_is_kept_on_another_number_of_processes(tmp_path: Path) -> None:
    """The brief run's micro-steps (one full row a process) are no other measurement: a run
    resumed on another number of GPUs measured its anchors again, and could change them midway.
    An unfinished brief run of other micro-steps is set aside, not resumed as another run's."""
    from longred_bench.training.anchors import IMPACT, _settled, brief_config, brief_key

    cfg = smoke("longrecipe", impact_steps=1, micro_tokens=1024, tokens_per_step=8192)
    one, two = brief_config(cfg, 1024, 1), brief_config(cfg, 1024, 2)
    assert (one.micro_tokens, two.micro_tokens) == (1024, 2048)
    assert one.tokens_per_step == two.tokens_per_step and brief_key(one) == brief_key(two)
    out = tmp_path / "run"
    _brief_folder(out / "impact", one)
    impact = {"anchors": ["digit"], "config": brief_key(one)}
    (out / IMPACT).write_text(json.dumps(impact))
    assert _settled(out, brief_key(two), cfg, two, progress=False) == impact  # measured once
    (out / IMPACT).unlink()  # the brief run's, unmeasured: on two processes it starts anew
    assert _settled(out, brief_key(two), cfg, two, progress=False) is None
    assert not (out / "impact").exists()
    assert [p.name for p in out.iterdir()] == [f"impact.{brief_key(one)[:12]}"]
    # a brief run whose config this version refuses (a key since removed): set aside, not
    # resumed into "holds a run of another config" about a folder the user never named
    (out / "impact").mkdir()
    (out / "impact" / "config.yaml").write_text("recipe: cpt\nno_such_key: 1\n")
    assert _settled(out, brief_key(two), cfg, two, progress=False) is None
    assert not (out / "impact").exists() and (out / "impact.unreadable" / "config.yaml").is_file()


def test_a_measurement_set_aside_under_a_taken_name_comes_back(tmp_path: Path) -> None:
    """A set-aside whose name was taken (``impact.<hash>-2.json``, beside a folder of that hash
    that never came back) was never looked for: the anchors were measured again on every
    switch back."""
    from longred_bench.training.anchors import IMPACT, _settled, brief_config, brief_key

    cfg = smoke("longrecipe", impact_steps=1)
    brief = brief_config(cfg, 1024)
    key = brief_key(brief)
    out = tmp_path / "run"
    (out / f"impact.{key[:12]}").mkdir(parents=True)  # a brief run's folder without its config
    impact = {"anchors": ["digit"], "config": key}
    (out / f"impact.{key[:12]}-2.json").write_text(json.dumps(impact))
    _brief_folder(out / f"impact.{key[:12]}-3", brief)  # its brief run, under a third name
    assert _settled(out, key, cfg, brief, progress=False) == impact
    assert json.loads((out / IMPACT).read_text()) == impact and _steps(out / "impact") == 1


def test_a_brief_run_resumes_under_another_profile_and_an_older_key_stands(tmp_path: Path):
    """The profile's name decides nothing a run trains: a brief run stopped under ``smoke``
    was set aside as another config's when resumed under a copy of it, and trained again; a
    measurement keyed with the profile's name (before 2026-12-05) was measured again."""
    from longred_bench.results import config_hash
    from longred_bench.training import anchors
    from longred_bench.training.anchors import IMPACT, _settled, brief_config, brief_key

    cfg = smoke("longrecipe", impact_steps=2)
    brief = brief_config(cfg, 1024)
    mine, my_brief = cfg.replace(profile="mine"), brief.replace(profile="mine")
    assert brief_key(brief) == brief_key(my_brief)
    out = tmp_path / "run"
    _brief_folder(out / "impact", brief)  # stopped before its measurement
    assert _settled(out, brief_key(my_brief), mine, my_brief, progress=False) is None
    assert [p.name for p in out.iterdir()] == ["impact"] and _steps(out / "impact") == 2
    named = config_hash({"brief": brief.replace(micro_tokens=0).to_dict(),
                         "windows": anchors.IMPACT_WINDOWS})  # fmt: skip
    impact = {"anchors": ["digit"], "config": named}
    (out / IMPACT).write_text(json.dumps(impact))
    assert _settled(out, brief_key(brief), cfg, brief, progress=False) == impact
