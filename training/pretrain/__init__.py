"""Pretraining-only parts: tokenizer, tiny-base, copy warm-up, retrieval rows."""
