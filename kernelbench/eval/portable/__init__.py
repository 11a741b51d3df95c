"""Checking and timing code that depends only on torch and the standard library.

The grader imports it from here; `kernelbench.eval.agent_files` copies this folder verbatim into an agent's
workspace so that the workspace's check.py and benchmark.py run the very same code (no secrets, no hardware
tables live here).
"""
