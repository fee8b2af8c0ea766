import sys

from harness.cli.commands import main

sys.exit(main())
