"""The results document and what reads it back: results.json, its typed header, a sweep's identity,
--resume, merge of shards, fingerprints.
"""
