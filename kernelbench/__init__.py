"""KernelBench Hard: grade agent-written GPU kernels against measured hardware ceilings."""

__version__ = "0.1.0"
