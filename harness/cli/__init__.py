"""`harness`: parses arguments, calls the service, shows the outcome; the console; docs/reference/commands/.
"""
