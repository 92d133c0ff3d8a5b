"""Scale profiles as files: ``smoke``, ``tiny``, ``smol`` and ``paper`` ship here as YAML; a
user's own file (``--profile my.yaml``, ``extends: smol``) runs any table on their model. See
:mod:`~longred_bench.profiles.loader` and :mod:`~longred_bench.profiles.schema`."""

from longred_bench.profiles.loader import BUILTIN, DEFAULT, load_profile, profile_help
from longred_bench.profiles.schema import Profile

__all__ = ["BUILTIN", "DEFAULT", "Profile", "load_profile", "profile_help"]
