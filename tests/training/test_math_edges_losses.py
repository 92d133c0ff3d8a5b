"""Edge cases of the training losses and of the rows they read (``training/objectives.py``,
``training/lm_loss.py``, ``training/streams.py``): a single counted prediction or token, none
at all, low-precision inputs, a frozen teacher that receives no gradient, layers that must pair
up, the LM loss under left padding, behind a process wrapper and with a refused head, the
batches a stream hands out (real-token counts, device moves, refused window sets), and how a dry
run counts each stream's rows (which stream LongRecipe's selection thins, the memo of counts,
the window of a pretraining run, a recipe that trains nothing)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from train_helpers import smoke, tiny_llama

import longred_bench.training.data as data_module
import longred_bench.training.data_plan as data_plan
import longred_bench.training.lm_loss as lm_loss_module
from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.lm_loss import lm_loss, output_projection, resolve_lm_loss
from longred_bench.training.objectives import (
    causal_lm_loss,
    hidden_cosine_loss,
    relation_kl_loss,
)
from longred_bench.training.plan import micro_rows
from longred_bench.training.streams import Batch, WindowStream


def _ids(rows: int, length: int, vocab: int = 257) -> torch.Tensor:
    return torch.randint(0, vocab, (rows, length), generator=torch.Generator().manual_seed(2))


# ---------------------------------------------------------------- causal_lm_loss


def test_one_counted_prediction_is_its_own_cross_entropy() -> None:
    logits = torch.randn(1, 4, 7, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[3, 5, 1, 2]])
    mask = torch.tensor([[True, True, False, False]])  # only 0 -> 1 counts
    expected = F.cross_entropy(logits[0, :1], ids[0, 1:2])
    assert float(causal_lm_loss(logits, ids, mask)) == pytest.approx(float(expected), rel=1e-6)


def test_no_counted_prediction_gives_exactly_zero() -> None:
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[1, 2, 3], [4, 0, 1]])
    none = torch.zeros(2, 3, dtype=torch.bool)
    one_real = torch.tensor([[False, True, False], [True, False, False]])  # no real pair
    for mask in (none, one_real):
        loss = causal_lm_loss(logits, ids, mask)
        assert loss.dtype == torch.float32 and float(loss) == 0.0


def test_bf16_logits_give_an_fp32_loss_of_the_fp32_logits() -> None:
    logits = torch.randn(2, 6, 11, generator=torch.Generator().manual_seed(3)).bfloat16()
    ids = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(4))
    mask = torch.ones(2, 6, dtype=torch.bool)
    loss = causal_lm_loss(logits, ids, mask)
    expected = F.cross_entropy(logits[:, :-1].float().reshape(-1, 11), ids[:, 1:].reshape(-1))
    assert loss.dtype == torch.float32
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)


# ---------------------------------------------------------------- distillation distances


def test_hidden_cosine_of_one_selected_token_is_one_minus_its_cosine() -> None:
    gen = torch.Generator().manual_seed(5)
    s, t = torch.randn(1, 3, 4, generator=gen), torch.randn(1, 3, 4, generator=gen)
    mask = torch.tensor([[False, True, False]])
    cos = F.cosine_similarity(s[0, 1].double(), t[0, 1].double(), dim=0)
    assert float(hidden_cosine_loss([s], [t], mask)) == pytest.approx(1.0 - float(cos), rel=1e-6)


def test_hidden_cosine_of_no_selected_token_is_zero_with_a_graph() -> None:
    gen = torch.Generator().manual_seed(7)
    s = torch.randn(1, 3, 4, generator=gen, requires_grad=True)
    t = torch.randn(1, 3, 4, generator=gen)
    mask = torch.zeros(1, 3, dtype=torch.bool)
    loss = hidden_cosine_loss([s, s], [t, t], mask)
    assert float(loss.detach()) == 0.0  # nothing compared: no distance, as relation_kl_loss gives
    loss.backward()  # every process of a distributed step can still run its backward
    assert s.grad is not None and float(s.grad.abs().sum()) == 0.0


def test_hidden_cosine_loss_is_fp32_for_fp32_layers() -> None:
    gen = torch.Generator().manual_seed(6)
    s, t = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 3, 4, generator=gen)
    assert hidden_cosine_loss([s, s], [t, t], None).dtype == torch.float32


def test_hidden_cosine_layers_must_pair_up() -> None:
    h = torch.randn(1, 2, 4)
    with pytest.raises(ValueError):
        hidden_cosine_loss([h, h], [h], None)


def test_the_teacher_gets_no_gradient_from_either_distance() -> None:
    gen = torch.Generator().manual_seed(7)
    student = torch.randn(1, 4, 8, generator=gen, requires_grad=True)
    teacher = torch.randn(1, 4, 8, generator=gen, requires_grad=True)
    hidden_cosine_loss([student], [teacher], None).backward()
    assert student.grad is not None and teacher.grad is None
    q_s = torch.randn(1, 2, 5, 4, generator=gen, requires_grad=True)
    q_t = torch.randn(1, 2, 5, 4, generator=gen, requires_grad=True)
    for impl in ("naive", "chunked"):  # the naive path would differentiate a live teacher
        q_s.grad = None
        relation_kl_loss(q_s, q_t, None, impl=impl).backward()
        assert q_s.grad is not None and q_t.grad is None, impl


# ---------------------------------------------------------------- lm_loss


def test_auto_on_cuda_takes_liger_where_installed_else_chunked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lm_loss_module, "liger_available", lambda: True)
    assert resolve_lm_loss("auto", "cuda") == "liger"
    monkeypatch.setattr(lm_loss_module, "liger_available", lambda: False)
    assert resolve_lm_loss("auto", "cuda") == "chunked"
    assert resolve_lm_loss("auto", "cpu") == "plain"


def test_a_soft_capped_head_is_refused_for_the_chunked_loss() -> None:
    model = tiny_llama()
    model.config.final_logit_softcapping = 30.0
    with pytest.raises(UserError, match="soft cap"):
        output_projection(model)


class _Wrapper(torch.nn.Module):
    """What DDP looks like to the loss: the model under ``.module``, the same call."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


def test_the_chunked_loss_reaches_the_head_under_a_process_wrapper() -> None:
    model = tiny_llama()
    wrapped = _Wrapper(model)
    assert output_projection(wrapped) is model.lm_head
    ids = _ids(2, 9)
    mask = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        plain = lm_loss(model, ids, mask, impl="plain")
        chunked = lm_loss(wrapped, ids, mask, impl="chunked")
    assert float(chunked) == pytest.approx(float(plain), rel=1e-5)


def test_left_padding_reaches_the_model_as_its_attention_mask() -> None:
    model = tiny_llama()
    ids = _ids(2, 8)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, :3] = False  # a left-padded row: its real tokens must not attend to the pads
    with torch.no_grad():
        masked = causal_lm_loss(model(ids, attention_mask=mask).logits, ids, mask)
        unmasked = causal_lm_loss(model(ids).logits, ids, mask)
        assert abs(float(masked) - float(unmasked)) > 1e-4  # the mask matters here
        for impl in ("plain", "chunked"):
            got = lm_loss(model, ids, mask, impl=impl)
            assert float(got) == pytest.approx(float(masked), rel=1e-5), impl


def test_hidden_states_of_another_length_than_the_targets_are_refused() -> None:
    model = tiny_llama()
    ids = _ids(2, 6)
    with torch.no_grad(), pytest.raises(RuntimeError, match="logits_to_keep"):
        lm_loss(model, ids, None, impl="chunked", logits_to_keep=1)
    assert "forward" not in vars(model.lm_head)


def test_the_head_is_itself_again_after_a_failed_call() -> None:
    model = tiny_llama()

    def fail(*args, **kwargs):
        raise RuntimeError("the decoder failed")

    model.model.register_forward_pre_hook(fail)
    with pytest.raises(RuntimeError, match="the decoder failed"):
        lm_loss(model, _ids(1, 4), None, impl="chunked")
    assert "forward" not in vars(model.lm_head)
    assert type(model.lm_head).forward is torch.nn.Linear.forward


# ---------------------------------------------------------------- streams


def test_a_batch_counts_its_real_tokens_and_keeps_ids_and_mask_apart() -> None:
    ids = torch.arange(8).view(2, 4)
    mask = torch.tensor([[1, 1, 1, 0], [0, 1, 1, 1]], dtype=torch.bool)
    batch = Batch(ids, mask)
    assert batch.tokens == 6
    moved = batch.to(torch.device("cpu"))
    assert torch.equal(moved.ids, ids) and torch.equal(moved.mask, mask)
    assert moved.mask.dtype == torch.bool and moved.ids.dtype == ids.dtype


def test_a_stream_keeps_its_shape_and_a_bool_mask_and_refuses_empty_or_mismatched_windows() -> None:
    ids = torch.arange(12).view(3, 4)
    stream = WindowStream("s", ids, torch.tensor([[1, 1, 0, 0]] * 3), seed=0)
    assert (stream.length, len(stream)) == (4, 3)  # tokens per window, windows
    batch = stream.next(3)
    assert batch.mask.dtype == torch.bool and batch.tokens == 6
    with pytest.raises(UserError, match="no windows"):
        WindowStream("s", ids[:0], torch.ones(0, 4, dtype=torch.bool), seed=0)
    with pytest.raises(UserError, match="no windows"):
        WindowStream("s", ids, torch.ones(3, 5, dtype=torch.bool), seed=0)


def test_a_stream_state_records_its_place_within_the_epoch() -> None:
    stream = WindowStream(
        "s", torch.arange(20).view(5, 4), torch.ones(5, 4, dtype=torch.bool), seed=1
    )
    stream.next(2)
    assert stream.state_dict() == {"epoch": 0, "cursor": 2, "rows": 5}
    stream.next(4)
    assert stream.state_dict() == {"epoch": 1, "cursor": 1, "rows": 5}


# ---------------------------------------------------------------- dry-run row counts


def test_the_dry_run_thins_only_the_long_stream_by_the_sentence_selection(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_text, short_text = tmp_path / "long.txt", tmp_path / "short.txt"
    long_text.write_text("In 1801 it rained. " * 200)
    short_text.write_text("It rained all day. " * 200)
    cfg = smoke(
        "longrecipe", anchors=["digit"], keep_other=0.5,
        long_data=str(long_text), short_data=str(short_text),
    )  # fmt: skip
    calls = {}

    def counted(cfg, tokenizer, source, length, seed, selection, memo):
        calls[source] = selection
        return 10**9, {"source": source, "length": length}  # more rows than the run reads

    monkeypatch.setattr(data_plan, "counted_rows", counted)
    assert data_plan.data_lines(cfg, 256, byte_tokenizer()) == []
    assert set(micro_rows(cfg, 256)) == {"long", "short"}
    assert calls == {str(long_text): (("digit",), 0.5), str(short_text): None}


def test_a_shared_memo_keeps_the_counts_of_each_retrieval_and_copy_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def stream_data(tokenizer, source, length, *, seed, retrieval_fraction, retrieval_phrasing,
                    copy_fraction, selection):  # fmt: skip
        rows = 100 + int(100 * retrieval_fraction) + int(1000 * copy_fraction)
        rows += 10_000 * (retrieval_phrasing == "eval")
        return SimpleNamespace(ids=[0] * rows, record={"rows": rows})

    monkeypatch.setattr(data_module, "stream_data", stream_data)
    memo: dict = {}
    tok = object()
    base = SimpleNamespace(retrieval_fraction=0.0, retrieval_phrasing="train", copy_fraction=0.0)
    settings = [
        (base, 100),
        (SimpleNamespace(**{**vars(base), "copy_fraction": 0.5}), 600),
        (SimpleNamespace(**{**vars(base), "retrieval_fraction": 0.5}), 150),
        (SimpleNamespace(**{**vars(base), "retrieval_phrasing": "eval"}), 10_100),
    ]
    for cfg, rows in settings * 2:  # the second round reads the memo
        assert data_plan.counted_rows(cfg, tok, "src", 64, 0, None, memo)[0] == rows


def test_pretraining_is_counted_at_its_architectures_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    windows = []
    monkeypatch.setattr(
        data_plan, "data_lines", lambda cfg, window, *args, **kwargs: windows.append(window) or []
    )
    data_plan.describe_plan_with_data(
        smoke("pretrain", architecture={"max_position_embeddings": 96})
    )
    data_plan.describe_plan_with_data(smoke("pretrain"))
    assert windows == [96, 256]  # the architecture's, else pretraining's default


def test_a_recipe_that_trains_nothing_counts_no_data(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("data counted for a recipe that reads none")

    monkeypatch.setattr(data_plan, "data_lines", refuse)
    text = data_plan.describe_plan_with_data(smoke("merge", merge_with="tiny-random"))
    assert "no training steps" in text


def test_pretraining_tokenizers_are_remembered_per_tokenizer_and_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = []

    def local(cfg):
        made.append((cfg.tokenizer, cfg.vocab_size))
        return object(), ""

    monkeypatch.setattr(data_plan, "local_tokenizer", local)
    memo: dict = {}
    small, large = smoke("pretrain", vocab_size=512), smoke("pretrain", vocab_size=1024)
    first = data_plan.memo_tokenizer(small, memo)
    assert data_plan.memo_tokenizer(small, memo) is first
    assert data_plan.memo_tokenizer(large, memo) is not first
    assert made == [(small.tokenizer, 512), (large.tokenizer, 1024)]


def test_a_hub_source_without_a_fallback_is_only_said(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import longred_bench.data.source_documents as source_documents

    hub = SimpleNamespace(source=SimpleNamespace(members=[SimpleNamespace(kind="hf")]))
    monkeypatch.setattr(source_documents, "resolve_source", lambda source, network: hub)
    short_text = tmp_path / "short.txt"
    short_text.write_text("It rained all day. " * 300)
    cfg = smoke("cpt", long_data="hf:org/books", short_data=str(short_text))
    lines = data_plan.data_lines(cfg, 256, byte_tokenizer())
    assert lines == [
        "data long: hf:org/books is read from the hub at training time; its epochs are said then"
    ]
