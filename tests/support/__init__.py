"""Code the tests and the benchmarks share, kept out of the package since no command uses it: the synthetic data
folder (`synthetic`), the hostile-input catalogue built on it (`hostile`) and the red-team manifest's model
(`integrity_suite`). Imported as `tests.support.<module>` from the repository root (`python -m pytest`, and the
benchmarks, which put the root on sys.path)."""
