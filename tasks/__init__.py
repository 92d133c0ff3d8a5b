"""The lm-eval task registry of longred-bench (YAML configs and their loaders), installed as
``longred_bench.tasks``; ``longred-bench tasks-path`` prints its folder."""
