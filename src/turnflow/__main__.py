import sys

from turnflow.cli import main

sys.exit(main())
