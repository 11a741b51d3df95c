"""Run directories (result.json), annotations, leaderboard derivation and importers."""
