"""``python -m kvrecords``: the same as the ``kvrecords`` command."""

from kvrecords.cli.main import main

raise SystemExit(main())
