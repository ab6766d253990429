"""``python -m course.grade``: see :mod:`course.grade`."""

import sys

from . import main

sys.exit(main())
