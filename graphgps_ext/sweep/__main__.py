import sys

from graphgps_ext.sweep.cli import main

sys.exit(main())
