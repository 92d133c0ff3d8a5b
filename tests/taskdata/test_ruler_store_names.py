"""The RULER sample store keeps apart what differs in its samples (fixtures in
``conftest.py``): a phrasing family and fixed needle depths each name files of their own."""

from __future__ import annotations

from longred_bench.taskdata.ruler import cache_path, load_or_generate


def test_each_phrasing_family_is_stored_apart(byte_tok, tmp_path) -> None:
    """Samples in a family's phrasing are not read back for RULER's own, nor the reverse."""
    args = ("niah_single_2", byte_tok, 1024, 1, 0)
    paths = {p: cache_path(*args, cache=tmp_path, phrasing=p) for p in ("standard", "heldout")}
    assert paths["standard"] != paths["heldout"] and "-heldout-" in paths["heldout"].name
    (standard,) = load_or_generate(*args, cache=tmp_path)
    (heldout,) = load_or_generate(*args, cache=tmp_path, phrasing="heldout")
    assert heldout.metadata["phrasing"] == "heldout" and "phrasing" not in standard.metadata
    assert heldout.input != standard.input
    assert load_or_generate(*args, cache=tmp_path)[0] == standard


def test_fixed_depths_are_stored_apart(byte_tok, tmp_path) -> None:
    """Samples with the needle at fixed depths are stored by those depths, apart from drawn
    ones and from other depths."""
    args = ("niah_single_2", byte_tok, 1024, 2, 0)
    drawn = load_or_generate(*args, cache=tmp_path)
    shallow = load_or_generate(*args, cache=tmp_path, depths=(0, 10))
    deep = load_or_generate(*args, cache=tmp_path, depths=(90, 100))
    assert [s.metadata["depth_percent"] for s in shallow] == [[0.0], [10.0]]
    assert [s.metadata["depth_percent"] for s in deep] == [[90.0], [100.0]]
    assert drawn[0].metadata["depth_percent"] not in ([0.0], [90.0])
    names = {cache_path(*args, cache=tmp_path, depths=d).name for d in ((), (0, 10), (90, 100))}
    assert len(names) == 3


def test_a_store_file_with_another_sample_count_is_made_again(byte_tok, tmp_path) -> None:
    """A file that matches its manifest but holds another number of samples is not read as
    the samples asked for."""
    from longred_bench.taskdata.ruler.store import read_samples, write_samples

    args = ("niah_single_2", byte_tok, 1024, 2, 0)
    samples = load_or_generate(*args, cache=tmp_path)
    path = cache_path(*args, cache=tmp_path)
    assert read_samples(path, 2) == samples
    write_samples(path, samples[:1])
    assert read_samples(path, 1) == samples[:1]
    assert read_samples(path, 2) is None
    assert load_or_generate(*args, cache=tmp_path) == samples
