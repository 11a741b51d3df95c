SHAPES = [
    {"rows": 4, "cols": 64},
    {"rows": 3, "cols": 50},
]
