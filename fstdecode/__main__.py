import sys

from fstdecode.cli import main

sys.exit(main())
