"""`python -m tcplab` = the `tcplab` command."""

import sys

from .cli.main import main

sys.exit(main())
