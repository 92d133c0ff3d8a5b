"""One module per command body (drift, eval, psa, compare, train, data), the run cache
(:mod:`.units`) and tiny-base, the suite's own model, which importing this package registers in
the model zoo (:mod:`longred_bench.models.builders`)."""

from longred_bench.jobs import tiny_base  # noqa: F401  (registers tiny-base in the model zoo)
