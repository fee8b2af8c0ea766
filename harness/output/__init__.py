"""What a sweep writes as it goes: its results folder (results.json, table.md, report.md) and CI outputs
(JUnit XML, the GitHub job summary).
"""
