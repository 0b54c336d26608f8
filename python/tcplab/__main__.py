"""`python -m tcplab` = the `tcplab` command."""

import sys

from .entry import main

sys.exit(main())
