"""The dataset on disk: where files live, reading them safely with positions, their schemas,
model files as geometry, and atomic writes. Imports ``kv`` and ``problems`` only."""
