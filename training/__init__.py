"""Training objectives, position samplers and recipes, imported as ``longred_bench.training``."""
