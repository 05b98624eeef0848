"""Submissions: results bundles sent by someone else, checked (``validate``) and ranked
(``leaderboard``) only when every figure is recomputed from their per-question records."""
