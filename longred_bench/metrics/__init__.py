"""Metrics: pure tensor functions (similarity) and model-level measurements (drift)."""
