"""Models: loading by spec, RoPE extension specs, the zoo of named models, activation capture."""
