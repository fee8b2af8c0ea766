"""Bug reports: `report.md` beside each results.json, with the evidence (a diff of two runs' lowered
modules) and the commands that reproduce it. Pure rendering in `render`/`evidence`/`reproduce`;
the file reading and writing in `sources` and `write`."""
