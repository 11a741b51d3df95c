"""harness stage."""
