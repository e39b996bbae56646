import sys

from tablefmt.cli import main

sys.exit(main())
