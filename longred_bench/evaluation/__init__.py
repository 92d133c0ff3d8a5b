"""The harness around lm-eval: evaluation runs, the lm wrapper, vLLM, fit checks, perplexity."""
