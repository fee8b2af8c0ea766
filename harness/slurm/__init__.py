"""Sweeps on a Slurm cluster: `harness submit` writes and submits the job scripts."""
