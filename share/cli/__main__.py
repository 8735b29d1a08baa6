"""`python -m share.cli`: the same as the pprof-share command."""

import sys

from . import main

sys.exit(main())
