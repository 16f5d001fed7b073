"""``python -m kvrecords``: the same as the ``kvrecords`` command."""

from kvrecords.entry import main

main()
