"""Sentence splitting of prose documents, as character offsets.

Blank lines separate paragraphs. A sentence ends at ``.``, ``!`` or ``?``, plus closing quotes or
brackets, before whitespace and a capital, a digit or an opening quote, except after a known
abbreviation or an initial. A sentence is *usable* when it ends with that punctuation, starts with
a capital (after any quotes), and has 3 to 60 words; a paragraph's unfinished tail is a sentence
that is not usable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MIN_SENTENCE_WORDS, _MAX_SENTENCE_WORDS = 3, 60


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_ABBREVIATIONS = _word_set(
    "mr mrs ms messrs dr st jr sr gov gen col lt sgt capt maj rev prof hon sen rep no nos vs "
    "mt ft co corp inc ltd bros jan feb mar apr jun jul aug sep sept oct nov dec fig vol pp cf"
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?]+[\"'’”)\]]*(?=\s|$)")
_OPENERS = "\"'‘“(["


@dataclass(frozen=True)
class Sentence:
    """A sentence of a document: ``text[start:end]``, its paragraph index and word count."""

    start: int
    end: int
    paragraph: int
    words: int
    usable: bool


def _paragraph_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for gap in _PARAGRAPH_BREAK.finditer(text):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, len(text)))
    return spans


def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _is_abbreviation(text: str, sentence_start: int, dot: int) -> bool:
    parts = text[sentence_start:dot].split()
    token = parts[-1].lstrip(_OPENERS) if parts else ""
    if "." in token:  # U.S., a.m., e.g.
        return True
    return token.lower() in _ABBREVIATIONS or (len(token) == 1 and token.isupper())


def _make_sentence(text: str, start: int, end: int, paragraph: int, terminal: bool) -> Sentence:
    body = text[start:end]
    words = len(body.split())
    first_letter = next((c for c in body if c.isalpha()), "")
    usable = (
        terminal
        and first_letter.isupper()
        and (body[0].isalnum() or body[0] in _OPENERS)
        and _MIN_SENTENCE_WORDS <= words <= _MAX_SENTENCE_WORDS
    )
    return Sentence(start, end, paragraph, words, usable)


def split_sentences(text: str) -> list[Sentence]:
    """Cut ``text`` into sentences (rules in the module docstring), in order, as offsets."""
    sentences: list[Sentence] = []
    for paragraph, (p_start, p_end) in enumerate(_paragraph_spans(text)):
        start = _skip_space(text, p_start, p_end)
        for match in _SENTENCE_END.finditer(text, start, p_end):
            if match.start() < start:
                continue
            after = _skip_space(text, match.end(), p_end)
            if after < p_end:
                following = text[after]
                if not (following.isupper() or following.isdigit() or following in _OPENERS):
                    continue
            if text[match.start()] == "." and _is_abbreviation(text, start, match.start()):
                continue
            sentences.append(_make_sentence(text, start, match.end(), paragraph, True))
            start = after
        tail_end = len(text[start:p_end].rstrip()) + start
        if tail_end > start:
            sentences.append(_make_sentence(text, start, tail_end, paragraph, False))
    return sentences
