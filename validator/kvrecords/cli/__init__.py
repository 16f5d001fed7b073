"""The ``kvrecords`` command line: parse options, call the layers below, return an exit code.
Nothing imports this package (``kvrecords.__main__`` and the console script only call it)."""
