"""The evaluation harness (fieldrank.evaluation): LoCoMo loader, metrics, runner, calibration, suites."""
