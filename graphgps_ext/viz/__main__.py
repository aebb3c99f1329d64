"""Entry point of ``python -m graphgps_ext.viz`` (see :mod:`graphgps_ext.viz.cli`)."""
import sys

from graphgps_ext.viz.cli import main

sys.exit(main())
