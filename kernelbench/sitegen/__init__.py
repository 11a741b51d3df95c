"""sitegen stage."""
