"""``python -m kvrecords``: the same as the ``kvrecords`` command."""

from kvrecords.cli import main

main()
