"""The KV arithmetic: units, model geometry, bytes per token, weights, hardware figures, what
the hardware allows (roofline) and the prose grammar. Pure functions of values, no I/O;
imports nothing from the rest of kvrecords, so readers can use it on its own."""
