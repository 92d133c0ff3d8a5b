"""longred-bench: measure and repair what context-window extension does to a RoPE language model."""

from longred_bench import shadowing

shadowing.install()  # before anything imports transformers: see the module

__version__ = "0.1.0"
