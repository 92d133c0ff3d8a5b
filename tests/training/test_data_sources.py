"""Training data sources beyond the registry corpora (``longred_bench.data.corpus_spec``): local
``txt:``/``jsonl:``/``disk:`` members stream the texts written, a bad spec fails in one line,
the epochs line counts a corpus with few long documents, registry names keep their config
hashes, and ``hf:`` members (``datasets.load_dataset`` and the revision lookup replaced here,
never the network) are cached with their revision and fall back to the offline corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from data_helpers import HUB_ROWS as ROWS

from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import parse_member, parse_source
from longred_bench.data.source_documents import member_documents, resolve_source
from longred_bench.errors import UserError
from longred_bench.results import config_hash
from longred_bench.training.config import TrainConfig
from longred_bench.training.data import stream_data
from longred_bench.training.data_plan import describe_plan_with_data
from longred_bench.training.plan import epochs_line, stream_reads

TEXTS = [
    "the cat sat on the mat and looked at the door for a while",
    "a second document that is short",
    'third one: with punctuation, quotes "here" and a newline\nin the middle of it',
]


class WordTokenizer:
    """One id per whitespace word (a new word gets the next id): enough to cut windows."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def __call__(self, texts: list[str], add_special_tokens: bool = False) -> dict:
        return {"input_ids": [[self.vocab.setdefault(w, len(self.vocab)) for w in t.split()]
                              for t in texts]}  # fmt: skip

    def __len__(self) -> int:
        return max(len(self.vocab), 1)


def _expected_windows(tok: WordTokenizer, texts: list[str], length: int) -> torch.Tensor:
    rows = []
    for ids in tok(texts)["input_ids"]:
        rows += [ids[i : i + length] for i in range(0, len(ids) - length + 1, length)]
    return torch.tensor(rows)


@pytest.fixture
def txt_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "books"
    (folder / "sub").mkdir(parents=True)
    for i, text in enumerate(TEXTS):  # path order: a.txt, b.txt, sub/c.txt
        name = ["a.txt", "b.txt", "sub/c.txt"][i]
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "notes.md").write_text("not a document", encoding="utf-8")
    return folder


def test_a_txt_folder_streams_its_files_as_documents(txt_dir: Path) -> None:
    texts, record = member_documents(parse_member(f"txt:{txt_dir}", "s"))
    assert texts == TEXTS and record["documents"] == 3
    tok = WordTokenizer()
    got = stream_data(tok, f"txt:{txt_dir}", 4, seed=0)
    assert torch.equal(got.ids, _expected_windows(WordTokenizer(), TEXTS, 4))
    assert got.mask.all() and got.record["windows"] == len(got.ids)
    assert got.record["long_documents"] == 3 and got.record["members"][0]["fingerprint"]


def test_a_jsonl_file_with_a_custom_field(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    lines = [
        json.dumps({"content": t, "text": "not this one", "id": i}) for i, t in enumerate(TEXTS)
    ]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    texts, _ = member_documents(parse_member(f"jsonl:{path}:field=content", "s"))
    assert texts == TEXTS
    got = stream_data(WordTokenizer(), f"jsonl:{path}:field=content", 5, seed=0)
    assert torch.equal(got.ids, _expected_windows(WordTokenizer(), TEXTS, 5))
    with pytest.raises(UserError, match="line 1 has no string field 'body'"):
        member_documents(parse_member(f"jsonl:{path}:field=body", "s"))


def test_a_save_to_disk_folder_streams_its_rows(tmp_path: Path) -> None:
    import datasets

    folder = tmp_path / "saved"
    data = datasets.Dataset.from_dict({"text": TEXTS, "n": [1, 2, 3]})
    datasets.DatasetDict({"train": data, "test": data.select([0])}).save_to_disk(str(folder))
    texts, record = member_documents(parse_member(f"disk:{folder}", "s"))
    saved = datasets.load_from_disk(str(folder))["train"]._fingerprint
    assert texts == TEXTS and record["dataset_fingerprint"] == saved
    assert member_documents(parse_member(f"disk:{folder}:split=test", "s"))[0] == TEXTS[:1]
    got = stream_data(WordTokenizer(), f"disk:{folder}", 3, seed=0)
    assert torch.equal(got.ids, _expected_windows(WordTokenizer(), TEXTS, 3))


def test_members_join_in_order(txt_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps({"text": "x y z w v u"}) + "\n", encoding="utf-8")
    got = stream_data(WordTokenizer(), f"txt:{txt_dir}+jsonl:{path}", 3, seed=0)
    assert torch.equal(got.ids, _expected_windows(WordTokenizer(), [*TEXTS, "x y z w v u"], 3))
    assert [m["documents"] for m in got.record["members"]] == [3, 1]


@pytest.mark.parametrize(
    "spec",
    ["austin+kjv", "txt:", "hf:pg19:docs=0", "hf:pg19:dox=5", "jsonl:/x.jsonl:split=train",
     "hf:pg19|", "hf:pg19|hf:other", "austen|kjv", "zip:/data", "packed",
     "retrieval+packed", "hf:pg19+packed|packed"],
)  # fmt: skip
def test_a_bad_spec_fails_in_one_line_naming_it_and_the_forms(spec: str) -> None:
    with pytest.raises(UserError) as err:
        parse_source(spec)
    text = str(err.value)
    assert len(text.splitlines()) == 1 and repr(spec) in text
    assert "accepted forms:" in text and "jsonl:PATH[:field=NAME]" in text and "hf:NAME" in text
    with pytest.raises(UserError, match="accepted forms"):  # at config time, before any data
        TrainConfig.from_dict({"recipe": "cpt", "rope": "abf:theta=1e5", "short_data": spec})


def test_accepted_specs_parse() -> None:
    src = parse_source("hf:cerebras/SlimPajama-627B:split=train:docs=20+retrieval|austen+kjv")
    hub = src.members[0]
    assert (hub.kind, hub.target, hub.options["split"], hub.options["docs"]) == (
        "hf", "cerebras/SlimPajama-627B", "train", "20")  # fmt: skip
    assert [m.spec for m in src.fallback] == ["austen", "kjv"]
    assert parse_member("jsonl:/a/b.jsonl:field=content", "s").options == {"field": "content"}
    assert parse_source("pretrain").standalone and parse_source("/tmp/some.txt").standalone


class EosWordTokenizer(WordTokenizer):
    eos_token_id = 999


def test_a_packed_source_cuts_windows_across_documents_with_a_separator(txt_dir: Path) -> None:
    # TEXTS hold 14, 6 and 14 words: no document holds 16, joined they hold 34 + 2 separators
    with pytest.raises(UserError, match=r"no document of 16 tokens .*'\+packed'"):
        stream_data(EosWordTokenizer(), f"txt:{txt_dir}", 16, seed=0)
    got = stream_data(EosWordTokenizer(), f"txt:{txt_dir}+packed", 16, seed=0)
    ids = WordTokenizer()(TEXTS)["input_ids"]
    stream = [*ids[0], 999, *ids[1], 999, *ids[2]]
    assert torch.equal(got.ids, torch.tensor([stream[:16], stream[16:32]]))
    assert got.record["packed"] is True and got.record["long_documents"] == 0
    assert parse_source(f"txt:{txt_dir}+packed").packed
    assert not parse_source(f"txt:{txt_dir}").packed
    # without an end-of-text token the documents are joined as they are
    plain = stream_data(WordTokenizer(), f"txt:{txt_dir}+packed", 11, seed=0)
    flat = [i for doc in ids for i in doc]
    assert len(flat) == 34
    assert torch.equal(plain.ids, torch.tensor([flat[:11], flat[11:22], flat[22:33]]))
    with pytest.raises(UserError, match="has 34 tokens in all, fewer than one window of 40"):
        stream_data(WordTokenizer(), f"txt:{txt_dir}+packed", 40, seed=0)
    line = epochs_line("short", got.record, len(got.ids), 8)
    assert "gives 2 rows of 16 tokens (its documents joined end to end; 0 of them hold 16 " in line


def test_a_packed_fallback_is_packed_offline(
    txt_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LONGRED_CACHE", str(txt_dir.parent / "cache"))
    got = stream_data(EosWordTokenizer(), f"hf:nobody/none+packed|txt:{txt_dir}+packed", 16,
                      seed=0)  # fmt: skip
    assert got.record["fallback"]["used"] == f"txt:{txt_dir}+packed"
    assert got.record["packed"] is True and len(got.ids) == 2


def test_registry_names_keep_their_config_hashes() -> None:
    """Hashes computed by the code before data sources other than registry names existed."""
    from longred_bench.training.config import resolve_config

    cases = {
        "8e66fdfe9aabb022": {"recipe": "cpt", "rope": "abf:theta=1e5"},
        "2b68f8a72d79a2a1": {"recipe": "longred", "rope": "abf:theta=1e5",
                             "long_data": "austen+kjv+retrieval", "short_data": "brown",
                             "s2l_data": "kjv", "mix_short": 3, "mix_s2l": 1},
        "a7d2e12781ee6dc0": {"recipe": "pretrain", "long_data": "pretrain"},
    }  # fmt: skip
    for want, data in cases.items():
        assert config_hash(TrainConfig.from_dict(data).to_dict()) == want
    # smol's runs took 64 steps and read the registry corpora when that hash was computed (256
    # steps now, and hub data with those corpora as the fallback)
    smol = resolve_config("longred", profile="smol").replace(
        steps=64, long_data="austen+kjv", short_data="brown", s2l_data="brown"
    )
    assert config_hash(smol.to_dict()) == "69285ad05996656f"


def _few_long_docs(tmp_path: Path) -> Path:
    folder = tmp_path / "few"
    folder.mkdir()
    words = " ".join(f"w{i}" for i in range(20))
    (folder / "a.txt").write_text(words, encoding="utf-8")  # 20 tokens: 2 windows of 8
    (folder / "b.txt").write_text(words, encoding="utf-8")
    (folder / "c.txt").write_text("too short", encoding="utf-8")
    return folder


def test_the_epochs_line_of_a_corpus_with_few_long_documents(tmp_path: Path) -> None:
    folder = _few_long_docs(tmp_path)
    cfg = TrainConfig.from_dict({"recipe": "control", "long_data": f"txt:{folder}",
                                 "long_len": 8, "tokens_per_step": 32, "steps": 10})  # fmt: skip
    assert stream_reads(cfg, window=16) == {"long": 40}  # 4 rows a step, 10 steps
    got = stream_data(WordTokenizer(), cfg.long_data, 8, seed=0)
    assert len(got.ids) == 4 and got.record["long_documents"] == 2
    line = epochs_line("long", got.record, len(got.ids), 40)
    assert line == (
        f"data long: txt:{folder} gives 4 rows of 8 tokens (from 2 documents of at least 8 "
        "tokens), the budget reads 40 rows: 10.00 epochs (each row seen about 10.0 times)"
    )
    assert epochs_line("long", got.record, len(got.ids), 4) is None
    plan = describe_plan_with_data(cfg, 16, WordTokenizer())  # the dry run's text
    assert plan.splitlines()[-1] == line
    shorter = describe_plan_with_data(cfg.replace(steps=1), 16, WordTokenizer())
    assert shorter.splitlines()[-1] == "total tokens: 32"  # 4 rows read once: no line


def test_two_stage_recipes_count_the_steps_of_each_stream() -> None:
    cfg = TrainConfig.from_dict({"recipe": "linearard", "rope": "pi:factor=4", "long_len": 512,
                                 "steps": 10, "cpt_steps": 3, "tokens_per_step": 1024})  # fmt: skip
    assert stream_reads(cfg, window=256) == {"s2l": 40, "long": 6}


# --- hub members ----------------------------------------------------------------------------

SPEC = "hf:org/books:config=en:field=body:docs=3|austen+kjv"


def test_a_hub_member_is_streamed_cached_and_its_revision_recorded(hub: dict) -> None:
    resolved = resolve_source(SPEC)
    assert "fallback" not in resolved.record
    (entry,) = resolved.record["hub"]
    assert entry["revision"] == "abc123" and entry["documents"] == 3
    assert entry["dataset"] == "org/books" and not entry["read_offline"]
    (path, name, kwargs), = hub["load"]  # fmt: skip
    assert (path, name, kwargs["streaming"], kwargs["revision"], kwargs["split"]) == (
        "org/books", "en", True, "abc123", "train")  # fmt: skip
    assert str(Path(kwargs["cache_dir"])).startswith(str(Path(hub_corpora.cache_dir())))
    member = resolved.source.members[0]
    assert member_documents(member)[0] == [r["body"] for r in ROWS[:3]]
    got = stream_data(WordTokenizer(), SPEC, 2, seed=0)
    assert got.record["hub"][0]["revision"] == "abc123"
    assert len(hub["load"]) == 1  # read once, then from the cache


def test_offline_a_cached_hub_member_is_read_from_the_cache(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolve_source(SPEC)
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})  # a new process
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    resolved = resolve_source(SPEC)
    assert resolved.record["hub"][0]["revision"] == "abc123"
    assert resolved.record["hub"][0]["read_offline"] and len(hub["load"]) == 1
    assert len(hub["revision"]) == 1  # the hub was not asked again


@pytest.mark.parametrize("offline", [True, False])
def test_the_fallback_rule(
    hub: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, offline: bool
) -> None:
    if offline:
        monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
        why = "HF_DATASETS_OFFLINE is set"
    else:

        def unreachable(dataset: str, rev: str | None) -> str:
            raise hub_corpora.HubUnavailable("the hub did not answer (ConnectError)")

        monkeypatch.setattr(hub_corpora, "hub_revision", unreachable)
        why = "the hub did not answer"
    resolved = resolve_source(SPEC)
    assert [m.spec for m in resolved.source.members] == ["austen", "kjv"]
    assert resolved.record["fallback"]["used"] == "austen+kjv"
    assert why in resolved.record["fallback"]["reason"] and "hub" not in resolved.record
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "using the offline fallback 'austen+kjv'" in err[0]
    assert hub["load"] == []
    dry = resolve_source(SPEC, network=False).record  # the side this process chose, as keyed
    assert dry["fallback"]["used"] == "austen+kjv"
    with pytest.raises(UserError, match="names no offline fallback") as exc:
        resolve_source("hf:org/books:field=body")
    assert len(str(exc.value).splitlines()) == 1


def test_a_job_planned_with_the_hubs_rows_refuses_the_fallback(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With LONGRED_NO_FALLBACK set (jobs ``--emit-slurm`` planned with the hub's rows), a hub
    that does not answer stops the job in one line instead of training on the fallback; an
    offline variable set on purpose still takes the fallback."""

    def unreachable(dataset: str, rev: str | None) -> str:
        raise hub_corpora.HubUnavailable("the hub did not answer (ConnectError)")

    monkeypatch.setattr(hub_corpora, "hub_revision", unreachable)
    monkeypatch.setenv(hub_corpora.NO_FALLBACK, "1")
    with pytest.raises(UserError, match="planned to read the hub's rows") as exc:
        resolve_source(SPEC)
    assert len(str(exc.value).splitlines()) == 1 and "'austen+kjv'" in str(exc.value)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert resolve_source(SPEC).record["fallback"]["used"] == "austen+kjv"
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.setenv(hub_corpora.NO_FALLBACK, "0")
    assert resolve_source(SPEC).record["fallback"]["used"] == "austen+kjv"


def test_the_fallback_is_what_the_stream_reads(
    hub: dict, monkeypatch: pytest.MonkeyPatch, txt_dir: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    got = stream_data(WordTokenizer(), f"hf:org/books|txt:{txt_dir}", 4, seed=0)
    assert torch.equal(got.ids, _expected_windows(WordTokenizer(), TEXTS, 4))
    assert got.record["fallback"]["used"] == f"txt:{txt_dir}"
    line = epochs_line("long", got.record, len(got.ids), 100)
    assert line is not None and f"(fallback txt:{txt_dir})" in line


def test_a_training_text_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """A plain text file of other bytes was a UnicodeDecodeError traceback."""
    binary = tmp_path / "bytes.txt"
    binary.write_bytes(b"some words \xff\xfe more")
    with pytest.raises(UserError, match=r"data file .*bytes\.txt: not UTF-8 text \(byte 11\)"):
        stream_data(WordTokenizer(), str(binary), 2, seed=0)


def test_txt_and_jsonl_members_not_utf8_are_one_line_naming_file_and_line(tmp_path: Path) -> None:
    """``txt:`` and ``jsonl:`` members of other bytes were a UnicodeDecodeError traceback."""
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("fine words", encoding="utf-8")
    (folder / "b.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(UserError, match=r"b\.txt is not UTF-8 text \(byte 3\); give UTF-8"):
        member_documents(parse_member(f"txt:{folder}", "s"))
    jsonl = tmp_path / "docs.jsonl"
    good = json.dumps({"text": "first"}).encode()
    jsonl.write_bytes(good + b"\n" + b'{"text": "caf\xe9"}\n')
    with pytest.raises(UserError, match=r"docs\.jsonl line 2 is not UTF-8 text \(byte 13\)"):
        member_documents(parse_member(f"jsonl:{jsonl}", "s"))
    for ends in (b"\r\n", b"\r", b"\n"):  # Windows, old Mac and Unix line ends, as text mode
        jsonl.write_bytes(good + ends + good + ends + good)  # the last line without an end
        assert member_documents(parse_member(f"jsonl:{jsonl}", "s"))[0] == ["first"] * 3
    jsonl.write_bytes(b"\xef\xbb\xbf" + good + b"\n")  # a UTF-8 byte-order mark is dropped
    assert member_documents(parse_member(f"jsonl:{jsonl}", "s"))[0] == ["first"]
    jsonl.write_bytes(good + b"\r" + b'{"text": "caf\xe9"}\r')
    with pytest.raises(UserError, match=r"docs\.jsonl line 1 is not UTF-8"):  # the chunk's first
        member_documents(parse_member(f"jsonl:{jsonl}", "s"))
