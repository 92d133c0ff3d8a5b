"""RULER's variable tracking (vt), common words (cwe) and frequent words (fwe) extraction.

- **vt**: one chain of 4 hops, ``VAR A = 12345``, ``VAR B = VAR A``, ... (5 variables, names of
  5 random capital letters), its statements spread in order through noise sentences; the
  answer is every variable that ends up holding the value. The haystack size is the number of
  noise sentences.
- **cwe**: a numbered list in which 10 common words appear ``freq_cw`` times each and the other
  words ``freq_ucw`` times each, shuffled; the answer is the 10 common words. RULER's defaults
  (30 and 3) apply from 4096 tokens; shorter contexts cannot hold 300 repetitions, so there
  ``freq_cw`` scales with the length (at least 2) and ``freq_ucw`` with it (at least 1, always
  below ``freq_cw``), lowered further when even the plain list of common words does not fit.
  The haystack size is the number of uncommon words.
- **fwe**: "coded text": random 6-letter words drawn with Zipf (alpha = 2) ranks over a vocabulary
  that grows with the length; a draw beyond the vocabulary prints as ``....`` (which the question
  says to ignore). The answer is the 3 most frequent words; a sample whose third and fourth
  counts tie is shrunk until the top three are unambiguous. The haystack size is the number of
  words.

RULER prepends one in-context example to these three prompts; here prompts carry none, so that
the smallest contexts (256 tokens) can still hold a sample (recorded as ``icl: False``).
"""

from __future__ import annotations

import itertools
import operator
import random
import string
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from longred_bench.taskdata.ruler import haystack as hs
from longred_bench.taskdata.ruler.phrasings import VT_FAMILIES
from longred_bench.taskdata.ruler.sizing import Draft, Rendered

VT_TEMPLATE = (
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    "{context}\nQuestion: Find all variables that are assigned the value {value} in the text "
    "above."
)
VT_PREFIX = (
    " Answer: According to the chain(s) of variable assignment in the text above, {count} "
    "variables are assigned the value {value}, they are:"
)
CWE_TEMPLATE = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n{context}\n"
    "Question: What are the {k} most common words in the above list?"
)
CWE_PREFIX = " Answer: The top {k} words that appear most often in the list are:"
FWE_TEMPLATE = (
    "Read the following coded text and track the frequency of each coded word. Find the three "
    "most frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. "
    "Please ignore the dots '....'. What are the three most frequently appeared words in the "
    "above coded text?"
)
FWE_PREFIX = (
    " Answer: According to the coded text above, the three most frequently appeared words are:"
)

VT_HOPS = 4
CWE_COMMON = 10
CWE_FREQ = (30, 3)
FWE_ALPHA = 2.0
FWE_WORD_LEN = 6
FWE_TOP = 3


def vt_prompt(rng: random.Random, phrasing: str) -> tuple[str, str]:
    """``(template, answer_prefix)`` of variable tracking: RULER's (``standard``) or one drawn
    from the family ``phrasing`` with ``rng``."""
    if phrasing == "standard":
        return VT_TEMPLATE, VT_PREFIX
    return VT_FAMILIES[phrasing].draw(rng)


def build_vt(rng: random.Random, length: int, phrasing: str = "standard") -> Iterator[Draft]:
    """One draft: a single 4-hop chain in noise, in RULER's prompt or one drawn from a phrasing
    family (:data:`longred_bench.taskdata.ruler.phrasings.VT_FAMILIES`; drawn last, so the
    standard samples are unchanged)."""
    names = hs.distinct(rng, lambda r: "".join(r.choices(string.ascii_uppercase, k=5)), VT_HOPS + 1)
    value = str(rng.randint(10_000, 99_999))
    statements = [f"VAR {names[0]} = {value}."]
    statements += [f"VAR {names[i]} = VAR {names[i - 1]}." for i in range(1, len(names))]
    depths = sorted(rng.uniform(0.0, 100.0) for _ in statements)
    units = hs.noise_sequence(length, " ")
    outputs = tuple(names)
    template, prefix = vt_prompt(rng, phrasing)
    prefix = prefix.format(count=len(names), value=value)
    before, after = (h.format(value=value) for h in template.split("{context}"))

    def render(n: int) -> Rendered:
        parts = hs.joined_parts(
            before, units[:n], statements, depths, after + prefix, separator=" "
        )
        meta = {
            "depth_percent": depths,
            "hops": VT_HOPS,
            "chains": 1,
            "haystack_units": n,
            "icl": False,
            "answer_prefix": prefix,
        }
        return Rendered("".join(parts), outputs, meta, parts)

    yield Draft(render=render, upper=length, units=units)


def cwe_frequencies(length: int) -> tuple[int, int]:
    """(freq_cw, freq_ucw) for a context length (RULER's 30/3 from 4096 tokens up)."""
    if length >= 4096:
        return CWE_FREQ
    freq_cw = max(2, round(CWE_FREQ[0] * length / 4096))
    freq_ucw = max(1, min(CWE_FREQ[1], freq_cw // 4))
    return freq_cw, freq_ucw


class WordDraws:
    """Distinct vocabulary words drawn in order, only as far as they are read, each with
    ``keys`` random sort keys.

    A lazy Fisher-Yates shuffle over the vocabulary (the positions swapped so far kept in a
    dict), so drawing ``n`` words costs ``n`` steps however large the vocabulary. Words and keys
    come from two generators seeded by ``rng``, so word ``i`` and its keys do not depend on how
    many are drawn after it, nor in how many steps.
    """

    def __init__(self, rng: random.Random, vocab: Sequence[str], keys: int) -> None:
        self.word_rng = random.Random(rng.getrandbits(64))
        self.key_rng = random.Random(rng.getrandbits(64))
        self.vocab, self.per_word = vocab, keys
        self.words: list[str] = []
        self.keys: list[float] = []
        self._swapped: dict[int, int] = {}

    def draw(self, n: int) -> None:
        """Draw words (and their keys) until ``n`` exist (at most the vocabulary size)."""
        start, stop = len(self.words), min(n, len(self.vocab))
        if stop <= start:
            return
        rand, swapped, size = self.word_rng.random, self._swapped, len(self.vocab)
        for i in range(start, stop):
            j = i + int(rand() * (size - i))  # uniform in [i, size)
            picked = swapped.get(j, j)
            swapped[j] = swapped.get(i, i)
            self.words.append(self.vocab[picked])
        key = self.key_rng.random
        self.keys.extend([key() for _ in range((stop - start) * self.per_word)])


class CweUnits(Sequence[str]):
    """What each uncommon word adds to the list, read lazily from a :class:`WordDraws` after its
    first ``skip`` words (the common ones).

    Unit ``k`` is ``freq`` lines of its word. The list is renumbered as it grows, but the first
    ``n`` units add the lines numbered ``start + 1`` to ``start + n * freq``; so unit ``k``'s
    lines carry a number with as many digits as line ``start + k * freq + 1`` (the smallest
    such: ``1``, ``10``, ``100``...). Where a tokenizer splits numbers into digits their counts
    then add up to the grown list's, and the texts recur across samples, so their counts are
    remembered; the sizing's drift corrects the rest.
    """

    def __init__(self, draws: WordDraws, skip: int, upper: int, freq: int, start: int) -> None:
        self.draws, self.skip, self.upper = draws, skip, upper
        self.freq, self.start = freq, start

    def __len__(self) -> int:
        return self.upper

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            ks = range(*index.indices(self.upper))
            if ks:
                self.draws.draw(self.skip + max(ks) + 1)
            words = self.draws.words
            return [self._unit(k, words[self.skip + k]) for k in ks]
        if not -self.upper <= index < self.upper:
            raise IndexError(index)
        return self[index % self.upper : index % self.upper + 1][0]

    def _unit(self, k: int, word: str) -> str:
        """The text unit ``k`` (of ``word``) adds."""
        digits = len(str(self.start + k * self.freq + 1))
        return f"\n1{'0' * (digits - 1)}. {word}" * self.freq


def build_cwe(rng: random.Random, length: int, corpus: str) -> Iterator[Draft]:
    """Drafts with decreasing common-word frequency (the caller takes the first that fits)."""
    vocab = hs.vocabulary(corpus)
    freq_cw, freq_ucw = cwe_frequencies(length)
    upper = min(len(vocab) - CWE_COMMON, max(1, length // freq_ucw))
    # Words are drawn as far as the sizing reads: the common ones first, then the uncommon.
    draws = WordDraws(rng, vocab, CWE_FREQ[1])
    draws.draw(CWE_COMMON)
    common = draws.words[:CWE_COMMON]
    common_keys = [rng.random() for _ in range(CWE_COMMON * CWE_FREQ[0])]
    prefix = CWE_PREFIX.format(k=CWE_COMMON)
    outputs = tuple(common)
    while True:
        common_entries = sorted(
            (common_keys[w * CWE_FREQ[0] + j], word)
            for w, word in enumerate(common)
            for j in range(freq_cw)
        )
        yield Draft(
            render=_cwe_renderer(draws, common_entries, (freq_cw, freq_ucw), prefix, outputs),
            upper=upper,
            units=CweUnits(draws, CWE_COMMON, upper, freq_ucw, len(common_entries)),
        )
        if freq_cw <= 2:
            return
        freq_cw = max(2, freq_cw // 2)
        freq_ucw = max(1, min(freq_ucw, freq_cw - 1))


def _cwe_renderer(
    draws: WordDraws,
    common_entries: list[tuple[float, str]],
    freqs: tuple[int, int],
    prefix: str,
    outputs: tuple[str, ...],
) -> Callable[[int], Rendered]:
    """``render(n)``: the common entries (sorted by their keys) merged with the entries of the
    first ``n`` uncommon words, numbered."""
    freq_cw, freq_ucw = freqs

    def render(n: int) -> Rendered:
        draws.draw(CWE_COMMON + n)
        per_word = draws.per_word
        keys = draws.keys[CWE_COMMON * per_word : (CWE_COMMON + n) * per_word]
        words = draws.words[CWE_COMMON : CWE_COMMON + n]
        entries = list(common_entries)
        for j in range(freq_ucw):  # the j-th entry of every uncommon word
            entries.extend(zip(keys[j::per_word], words, strict=True))
        entries.sort()
        lines = map("{}. {}".format, itertools.count(1), map(operator.itemgetter(1), entries))
        context = "\n".join(lines)
        prompt = CWE_TEMPLATE.format(context=context, k=CWE_COMMON) + prefix
        meta = {
            "freq_cw": freq_cw,
            "freq_ucw": freq_ucw,
            "num_uncommon": n,
            "icl": False,
            "answer_prefix": prefix,
        }
        return Rendered(prompt, outputs, meta)

    return render


def build_fwe(rng: random.Random, length: int) -> Iterator[Draft]:
    """One draft of Zipf-distributed coded words; ties for the top three are rejected."""
    support = max(10, length // 64)
    vocab = hs.distinct(
        rng, lambda r: "".join(r.choices(string.ascii_lowercase, k=FWE_WORD_LEN)), support
    )
    ranks = hs.zipf_sampler(rng, support, FWE_ALPHA)(length)
    words = [vocab[r - 1] if r else "...." for r in ranks]
    prefix = FWE_PREFIX

    def render(n: int) -> Rendered:
        counts = Counter(w for w in words[:n] if w != "....")
        top = counts.most_common(FWE_TOP + 1)
        outputs = tuple(w for w, _ in top[:FWE_TOP])
        prompt = FWE_TEMPLATE.format(context=" ".join(words[:n])) + prefix
        meta = {
            "alpha": FWE_ALPHA,
            "vocab_size": support,
            "num_words": n,
            "counts": [c for _, c in top],
            "icl": False,
            "answer_prefix": prefix,
        }
        return Rendered(prompt, outputs, meta)

    def accept(rendered: Rendered) -> bool:
        counts = rendered.metadata["counts"]
        if len(counts) < FWE_TOP:
            return False
        return len(counts) == FWE_TOP or counts[FWE_TOP - 1] > counts[FWE_TOP]

    yield Draft(render=render, upper=length, accept=accept, units=[" " + w for w in words])
