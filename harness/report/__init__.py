"""Bug reports: `report.md` beside each results.json, with the evidence (a diff of two runs' lowered
modules) and the commands that reproduce it. Pure rendering in `render`/`evidence`/`reproduce`;
the file reading and writing in `sources` and `write`."""

from harness.report.render import REPORT_FILE, render_report
from harness.report.write import ReportWriter, write_report

__all__ = ["REPORT_FILE", "ReportWriter", "render_report", "write_report"]
