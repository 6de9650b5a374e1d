"""``python -m fedplan …`` is the ``fedplan`` command."""

import sys

from fedplan.planner.cli import main

sys.exit(main())
