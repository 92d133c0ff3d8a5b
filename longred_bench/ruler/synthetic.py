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

import random
import string
from collections import Counter
from collections.abc import Iterator

from longred_bench.ruler import haystack as hs
from longred_bench.ruler.sizing import Draft, Rendered

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


def build_vt(rng: random.Random, length: int) -> Iterator[Draft]:
    """One draft: a single 4-hop chain in noise."""
    names = hs.distinct(rng, lambda r: "".join(r.choices(string.ascii_uppercase, k=5)), VT_HOPS + 1)
    value = str(rng.randint(10_000, 99_999))
    statements = [f"VAR {names[0]} = {value}."]
    statements += [f"VAR {names[i]} = VAR {names[i - 1]}." for i in range(1, len(names))]
    depths = sorted(rng.uniform(0.0, 100.0) for _ in statements)
    units = hs.noise_units(length)
    outputs = tuple(names)
    prefix = VT_PREFIX.format(count=len(names), value=value)

    def render(n: int) -> Rendered:
        context = " ".join(hs.insert_at_depths(units[:n], statements, depths))
        prompt = VT_TEMPLATE.format(context=context, value=value) + prefix
        meta = {
            "depth_percent": depths,
            "hops": VT_HOPS,
            "chains": 1,
            "haystack_units": n,
            "icl": False,
            "answer_prefix": prefix,
        }
        return Rendered(prompt, outputs, meta)

    yield Draft(render=render, upper=length, units=[" " + u for u in units])


def cwe_frequencies(length: int) -> tuple[int, int]:
    """(freq_cw, freq_ucw) for a context length (RULER's 30/3 from 4096 tokens up)."""
    if length >= 4096:
        return CWE_FREQ
    freq_cw = max(2, round(CWE_FREQ[0] * length / 4096))
    freq_ucw = max(1, min(CWE_FREQ[1], freq_cw // 4))
    return freq_cw, freq_ucw


def build_cwe(rng: random.Random, length: int, corpus: str) -> Iterator[Draft]:
    """Drafts with decreasing common-word frequency (the caller takes the first that fits)."""
    vocab = hs.vocabulary(corpus)
    freq_cw, freq_ucw = cwe_frequencies(length)
    upper = min(len(vocab) - CWE_COMMON, max(1, length // freq_ucw))
    words = rng.sample(vocab, CWE_COMMON + upper)  # a random draw without shuffling it all
    common = words[:CWE_COMMON]
    uncommon = words[CWE_COMMON:]
    # Each entry gets a fixed random sort key, so growing the list only interleaves new entries.
    common_keys = [rng.random() for _ in range(CWE_COMMON * CWE_FREQ[0])]
    uncommon_keys = [rng.random() for _ in range(upper * CWE_FREQ[1])]
    prefix = CWE_PREFIX.format(k=CWE_COMMON)
    outputs = tuple(common)
    while True:
        yield Draft(
            render=_cwe_renderer(
                common, uncommon, common_keys, uncommon_keys, freq_cw, freq_ucw, prefix, outputs
            ),
            upper=upper,
            units=cwe_units(uncommon, freq_ucw, length),
        )
        if freq_cw <= 2:
            return
        freq_cw = max(2, freq_cw // 2)
        freq_ucw = max(1, min(freq_ucw, freq_cw - 1))


def cwe_units(uncommon: list[str], freq_ucw: int, length: int) -> list[str]:
    """What each uncommon word adds to the list: ``freq_ucw`` numbered lines, with a number as
    wide as most entries' in a list of ``length`` tokens (about six tokens an entry; the
    sizing's drift corrects the rest)."""
    number = str(max(1, length // 6))
    return [f"\n{number}. {word}" * freq_ucw for word in uncommon]


def _cwe_renderer(common, uncommon, common_keys, uncommon_keys, freq_cw, freq_ucw, prefix, outputs):
    def render(n: int) -> Rendered:
        entries = [
            (common_keys[w * CWE_FREQ[0] + j], word)
            for w, word in enumerate(common)
            for j in range(freq_cw)
        ]
        entries += [
            (uncommon_keys[w * CWE_FREQ[1] + j], word)
            for w, word in enumerate(uncommon[:n])
            for j in range(freq_ucw)
        ]
        entries.sort()
        context = "\n".join(f"{i + 1}. {word}" for i, (_, word) in enumerate(entries))
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
