"""The command line (fieldrank.cli) and the first-hour walkthrough."""
