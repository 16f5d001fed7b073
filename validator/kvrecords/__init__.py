"""KV-cache efficiency records: the validator and the KV arithmetic library."""
