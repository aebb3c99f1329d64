"""``python -m graphgps_ext.bench``: see :mod:`graphgps_ext.bench`."""
from graphgps_ext.bench import main

raise SystemExit(main())
