"""A validation run: which files to check, the checks in order for each file, workers for large
datasets, and the reporters that print problems. Imports the layers below it, never the tools or
the CLI."""
