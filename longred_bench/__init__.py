"""longred-bench: measure and repair what context-window extension does to a RoPE language model."""

__version__ = "0.1.0"
