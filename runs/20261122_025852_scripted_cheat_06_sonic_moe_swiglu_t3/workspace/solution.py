"""Adversarial: the 'solution' is the reference itself (integrity class 1, library bypass)."""

from reference import Model as _Reference  # noqa: F401  (the grader must flag this import and the subclass)


class Model(_Reference):
    pass
