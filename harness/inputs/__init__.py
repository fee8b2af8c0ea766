"""What a user gives and what a run is given (pure): the config file, every command-line option declared
once, a script's own requirements, JAX versions and their Pythons, --shard, a run's environment.
"""
