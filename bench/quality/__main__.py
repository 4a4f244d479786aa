import sys

from bench.quality.cli import main

sys.exit(main())
