"""check.py and benchmark.py as they are written into an agent's workspace (see kernelbench.eval.agent_files)."""
