"""Shapes of the toy scaled GEMM (the second one has no dimension a power of two)."""

SHAPES = [
    {"M": 8, "N": 16, "K": 32},
    {"M": 5, "N": 12, "K": 20},
]
