"""One module per paper table or figure, the worker pool, and the `reproduce` dispatcher."""
