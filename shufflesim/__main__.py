import sys

from shufflesim.cli.main import main

sys.exit(main())
