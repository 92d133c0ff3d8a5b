"""Positional Contrastive Decoding: its config, the contrastive model and its lm-eval model."""
