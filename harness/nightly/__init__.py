"""The nightly check: sweep (newest releases by default), compare with a baseline, alarm on regressions."""
