"""The profile files and the table registry plan the same units as the per-table settings they
replaced: every table at every profile lists the unit folders (cache keys) the code at 22d405a
listed (``golden_unit_keys.json``), every recipe resolves to the same training config at every
built-in profile, and the units behind the committed ``tiny`` reports are found under the keys
the plan computes. Same keys, same cached results: a warm cache stays warm.

Keys now also hold the hash of the code a unit depends on (``UNIT_CODE`` in
``longred_bench/jobs/units.py``), which changes with every commit: here it is replaced by what
stood in its place before (``train_version: 1`` in a training run's key, nothing in any other
unit's), so every other part of every key is still checked against the golden file. A training
run's key held its profile's name until 2026-12-05 (``TrainConfig.trained_dict`` leaves it out
now, so profiles that resolve a run alike share it): here it is put back, as it stood. A unit
reading a data source with an offline fallback names the side it reads since 2026-12-05
(``sources_read``): left out here, as it stood before."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from longred_bench.models.choice import choose_model
from longred_bench.profiles import load_profile
from longred_bench.reproduce.registry import get_spec

GOLDEN = json.loads((Path(__file__).parent / "golden_unit_keys.json").read_text())
REPORTS = Path(__file__).resolve().parents[2] / "reports" / "tiny"
# The CPT runs Table 1 measures at its own extensions (ABF 4e5, 1e7, PI x4) are Table 1's units
# now, not Table 3's.
TABLE1_RUNS = {"runs/train-cpt-0068f05675b28437", "runs/train-cpt-67c65acd9ebadcc0",
               "runs/train-cpt-b6e62b40dc202379"}  # fmt: skip


def keys_before_code_hashes(kind: str) -> dict[str, int]:
    """What a unit's key held of its code before code hashes: a training run's hand-bumped
    version (1), nothing for other units (their stored configs' RULER generator and tiny-task
    versions never entered a unit folder's key)."""
    return {"train_version": 1} if kind == "train" else {}


@pytest.fixture
def golden_cache(monkeypatch: pytest.MonkeyPatch) -> str:
    from longred_bench.jobs import units

    monkeypatch.setenv("LONGRED_CACHE", GOLDEN["cache"])
    monkeypatch.setattr(units, "code_identity", keys_before_code_hashes)
    monkeypatch.setattr(units, "sources_read", lambda config: {})
    from longred_bench.training.config import TrainConfig

    monkeypatch.setattr(TrainConfig, "trained_dict", TrainConfig.to_dict)  # the profile's name
    return GOLDEN["cache"]


def planned(table: str, profile: str) -> set[str]:
    """The unit folders ``reproduce TABLE --profile P`` computes (PCD's test units at the first
    setting of its grid, as the golden file lists them)."""
    spec = get_spec(table)
    ctx = spec.resolve(choose_model(load_profile(profile)), progress=False)  # offline: fallback
    keys = {s.key for s in spec.steps(ctx)}
    if table == "pcd":
        from longred_bench.reproduce.pcd import _test_steps

        keys |= {s.key for s in _test_steps(ctx, ctx.settings.grid()[0])}
    return keys


CASES = [(t, p) for t, by_profile in GOLDEN["tables"].items() for p in by_profile]


# Table 1's zero-shot unit was runs/table1-<profile>-<hash>: a copy of a profile under another
# name measured it again. It is runs/table1/<hash> now, the same hash.
_PROFILE_NAMED = re.compile(r"^runs/table1-(?!after/).+-([0-9a-f]{16})$")


@pytest.mark.parametrize(("table", "profile"), CASES, ids=[f"{t}-{p}" for t, p in CASES])
def test_every_table_plans_the_units_it_planned(golden_cache, table: str, profile: str) -> None:
    want, got = set(GOLDEN["tables"][table][profile]), planned(table, profile)
    want = {_PROFILE_NAMED.sub(r"runs/table1/\1", k) for k in want}
    if (table, profile) == ("table3", "tiny"):
        assert want - got == TABLE1_RUNS and got < want
        assert planned("table1", "tiny") >= TABLE1_RUNS
    elif (table, profile) == ("tiny_base", "tiny"):  # the build is the table's note, not a unit
        assert [k for k in want - got if not k.startswith("models/tiny-base-")] == [] and got < want
    elif (table, profile) == ("table1", "tiny"):
        # Every seed's after-CPT and control checkpoints now (issue 44: (c) over all seeds):
        # seeds 1 and 2 of 4 CPT extensions and the control, each a training run and a drift.
        added = got - want
        assert want < got and len(added) == 2 * 5 * 2
        assert all(re.match(r"^runs/(train-(cpt|control)-|table1-after/)", k) for k in added)
    elif table in ("table4", "table5", "table6") and profile == "smoke":
        # The ablations gained Table 3's CPT row, the premise of their claims (issue 44).
        assert want < got and got - want <= planned("table3", profile)
    elif (table, profile) == ("fig2", "smol"):
        # Its short evaluations now carry `max_length: null` like every other table's (new
        # keys); its drift units are the same.
        evals = re.compile(r"^runs/table3-eval/")
        assert {k for k in want if not evals.match(k)} == {k for k in got if not evals.match(k)}
        assert len(want) == len(got)
    else:
        assert got == want


def test_every_recipe_resolves_as_before_at_every_builtin_profile(golden_cache) -> None:
    from longred_bench.errors import UserError
    from longred_bench.results import config_hash
    from longred_bench.training.config import resolve_config

    for name, want in GOLDEN["recipe_configs"].items():
        recipe, profile = name.split("@")
        try:
            cfg = resolve_config(recipe, profile=profile)
            if name in CHANGED:
                cfg = cfg.replace(**CHANGED[name])
            got = config_hash(cfg.to_dict())
        except UserError as exc:
            got = {"error": str(exc)}
        assert got == want, name


# Settings changed since: smol's runs take 256 steps where they took 64 (its training tables
# are sized to about a day of one GPU); LongRecipe at smol had long rows of 9,728 tokens, which
# cannot split a budget-matched step (Table 3's row) into whole rows, and replayed 16 steps.
# The paper profile's long rows are 32,768 tokens (LongReD's 32K) where they were 32,000.
# smol and the paper profiles read hub data with the registry corpora as the offline fallback
# where they read the registry corpora (its Brown had no text as long as SmolLM2's window for
# the short-to-long stream).
CHANGED = {**{f"{r}@smol": {"steps": 64} for r in ("cpt", "mix-cpt", "longred",
                                                    "attention-only", "linearard", "control",
                                                    "pose", "rpes")},
           "longrecipe@smol": {"long_len": 9728, "steps": 64, "replay_steps": 16},
           **{f"{r}@paper": {"long_len": 32000}
              for r in ("cpt", "mix-cpt", "longred", "attention-only", "linearard")}}  # fmt: skip
# The paper profile's LinearARD runs under FSDP2's bf16 policy (autocast's weight copies put it
# over 80 GiB per GPU), at paper-linearard with its teacher sharded too; the 128K profiles
# offload activations to the host, and their long rows run under FSDP2's policy, for the same
# reason.
CHANGED["linearard@paper"]["mixed_precision"] = "autocast"
CHANGED["linearard@paper-linearard"] = {"mixed_precision": "autocast",
                                        "teacher_placement": "replicate"}  # fmt: skip
for _p in ("paper-128k", "paper-mistral"):
    for _r in ("cpt", "mix-cpt", "longred", "attention-only", "linearard", "control", "pose",
               "rpes", "longrecipe"):  # fmt: skip
        CHANGED[f"{_r}@{_p}"] = {"activation_offload": False}
        if _r not in ("pose", "rpes", "longrecipe"):
            CHANGED[f"{_r}@{_p}"]["mixed_precision"] = "autocast"
# LongRecipe at the paper profiles: paper's 24K rows are 30% of an 80K window (the rope's
# default factor 4 made it 32K, where 24K is 75%), in 12 micro-steps whose rows split over 8
# GPUs (8 made 12 long rows a micro-step); paper-128k states 32K rows at its 128K extension and
# paper-linearard 9,830-token rows at its PI x8.
_PAPER_LONGRECIPE = {"rope": "abf:theta=4.89e7", "micro_tokens": 393216}
for _p in ("paper", "paper-128k", "paper-mistral", "paper-linearard"):
    CHANGED.setdefault(f"longrecipe@{_p}", {}).update(_PAPER_LONGRECIPE)
CHANGED["longrecipe@paper-128k"]["long_len"] = 24576
CHANGED["longrecipe@paper-linearard"]["long_len"] = 24576


def _recipe_data(recipe: str) -> dict[str, str]:
    """The data keys a recipe's own file (else the config's defaults) gives it."""
    from longred_bench.training.config import TrainConfig, read_yaml, recipe_file

    own = read_yaml(recipe_file(recipe))
    keys = ("long_data", "short_data", "s2l_data")
    return {k: own.get(k, TrainConfig.__dataclass_fields__[k].default) for k in keys}


for _p in ("smol", "paper", "paper-128k", "paper-mistral", "paper-linearard"):
    for _r in (
        "cpt",
        "mix-cpt",
        "longred",
        "attention-only",
        "linearard",
        "control",
        "pose",
        "rpes",
        "longrecipe",
    ):
        CHANGED[f"{_r}@{_p}"] = {**CHANGED.get(f"{_r}@{_p}", {}), **_recipe_data(_r)}
# paper's mixed rows take 4 micro-steps a step (were 8) and LongRecipe 16 (were 24), so that a
# micro-step's rows of each stream split over the 8 GPUs (they did not: the runs could not start).
for _r in ("mix-cpt", "longred", "longrecipe"):
    CHANGED[f"{_r}@paper"]["micro_tokens"] = 262144
# LongReD-C at the paper profiles samples its positions with LongReD's code's sigma 5 (was the
# recipe's 3, CREAM's value).
for _p in ("paper", "paper-128k", "paper-mistral", "paper-linearard"):
    CHANGED[f"longred@{_p}"]["cream_sigma"] = 3.0
# LinearARD at paper-linearard takes its released scripts' LoRA (rank 1024, alpha 2048; was 16).
CHANGED["linearard@paper-linearard"].update(lora_rank=16, lora_alpha=16.0)


def _records(path: Path) -> list[dict]:
    """A committed report's records less its per-document ones (``kind="eval_item"``, nine in
    ten lines), each of which carries the run and the stored config of one of the report's
    summary records (checked on every committed report when this was written)."""
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh if '"kind": "eval_item"' not in line]


def _committed_units(records: list[dict], cache: str) -> tuple[set[str], set[str]]:
    """The training runs and evaluation units behind a committed report's records, their cache
    root moved to ``cache`` (each distinct config keyed once)."""
    from longred_bench.jobs.units import unit_folder

    root = re.compile(r"^.*?/runs/")
    moved = lambda v: root.sub(f"{cache}/runs/", v) if isinstance(v, str) else v  # noqa: E731
    trains, evals, seen = set(), set(), set()
    for r in records:
        train = r.get("train") or {}
        if train.get("dir") and r.get("row") != "merge":  # a merge is keyed by its source's
            trains.add("runs/" + Path(train["dir"]).name)  # run.json, not by its config
        cfg = (r.get("provenance") or {}).get("config") or {}
        if "suite" in cfg and r.get("row") != "merge":
            text = json.dumps(cfg, sort_keys=True)
            if text in seen:
                continue
            seen.add(text)
            unit = {k: moved(v) for k, v in cfg.items()
                    if k not in ("ruler_generator", "tiny_tasks", "suite_builds",
                                 "code")}  # fmt: skip
            evals.add(unit_folder("table3-eval", unit))
    return trains, evals


REPORTED = ("table2", "table3", "table4", "table5", "table6", "table7", "table10", "linearard",
            "longrecipe", "fig2", "fig3", "table1")  # fmt: skip


@pytest.mark.parametrize("table", REPORTED)
def test_committed_tiny_reports_units_are_planned_under_their_keys(
    golden_cache, table, monkeypatch
) -> None:
    """Every training run and evaluation a committed ``tiny`` report was built from is a unit
    of the table's plan, under the same key (so a cache that held them still holds them). A
    report whose records carry source hashes was computed at one commit from a clean tree, and
    its training runs are keyed by the code hash of that commit (read from git); an older
    report's by the hand-bumped version that stood in its place."""
    from longred_bench.jobs import units
    from longred_bench.source_tree import commit_blobs, tree_hash

    path = REPORTS / f"{table}.jsonl.gz"
    records = _records(path)
    provs = [r.get("provenance") or {} for r in records]
    if all(p.get("source_hash") for p in provs):
        commits = {p["git_commit"] for p in provs}
        assert len(commits) == 1, commits  # one commit, its own files: no "+dirty", no "(copy)"
        assert {p["dirty"] for p in provs} == {False}
        (commit,) = commits
        blobs = commit_blobs(REPORTS.parents[1], commit)
        if blobs is None:
            pytest.skip(f"git cannot read commit {commit} here (a shallow clone?)")
        code = tree_hash(blobs, units.UNIT_CODE["train"])
        identity = lambda kind: {"code": code} if kind == "train" else {}  # noqa: E731
        monkeypatch.setattr(units, "code_identity", identity)
    trains, evals = _committed_units(records, golden_cache)
    assert trains or evals
    every = planned(table, "tiny")
    assert trains <= every
    assert evals <= every


MEASURED = ("value", "hidden_cosine", "attention_kl")
"""What a record measured (the rest of its fields say what and where)."""


def test_committed_tiny_reports_agree_on_every_shared_unit() -> None:
    """Reports that share a unit (the same stored config: model build, code hash, settings) give
    it the same numbers: no report was measured on another build of tiny-base, or on another
    machine's, than the others (the same config trained on two CPUs gives other weights)."""
    seen: dict[tuple, tuple] = {}
    clashes = []
    for path in sorted(REPORTS.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as fh:
            for line in fh:
                if '"kind": "eval", ' not in line and '"kind": "drift_layer", ' not in line:
                    continue  # per-document records follow their unit's summary
                r = json.loads(line)
                config = (r.get("provenance") or {}).get("config")
                if not config:
                    continue
                where = tuple(r.get(k) for k in ("kind", "task", "metric", "length", "extension",
                                                 "layer"))  # fmt: skip
                key = (json.dumps(config, sort_keys=True), *where)
                got = tuple(r.get(k) for k in MEASURED)
                first = seen.setdefault(key, (got, path.name))
                if first[0] != got:
                    clashes.append(f"{where}: {first[1]} {first[0]}, {path.name} {got}")
    assert len(seen) > 1000
    assert clashes == [], f"{len(clashes)} shared units disagree, e.g. {clashes[:3]}"
