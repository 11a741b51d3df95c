"""harness stage."""

DEFAULT_BUDGET_S = 45 * 60   # a run's wall-clock budget unless told otherwise
