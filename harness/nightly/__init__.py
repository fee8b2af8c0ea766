"""The nightly check: compare a sweep with a baseline, cell by cell, and say whether to
raise the alarm (pure). The `nightly` and `compare` commands are wired in `harness.service`."""
