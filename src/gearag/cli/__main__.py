"""``python -m gearag.cli``: the ``gearag`` command."""

import sys

from gearag.cli import main

sys.exit(main())
