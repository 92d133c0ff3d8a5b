"""One module per command body (drift, eval, psa, compare, train, data) and the run cache."""
