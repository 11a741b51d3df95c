"""The deck: problem specs (problem.yaml), reference and SOTA modules, shapes and prompts."""
