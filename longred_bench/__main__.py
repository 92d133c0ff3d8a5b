"""``python -m longred_bench`` runs the command line."""

import sys

from longred_bench.cli import main

sys.exit(main())
