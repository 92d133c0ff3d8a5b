"""``reproduce``: one module per paper table or figure, each declaring its
:class:`~longred_bench.reproduce.spec.TableSpec`; the registry that names them
(:mod:`~longred_bench.reproduce.registry`), the run grid the training tables share
(:mod:`~longred_bench.reproduce.grid`), the engine that runs any table at any profile
(:mod:`~longred_bench.reproduce.engine`) and its plan (:mod:`~longred_bench.reproduce.plan`)."""
