"""Task data builders: RULER, the NIAH grid, the tiny short tasks and the short benchmarks."""
