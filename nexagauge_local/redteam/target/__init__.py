"""The model under test: generating the responses a red-team audit then scores.

Kept apart from `judge/` on purpose: the judge is constrained to a schema and cached by verdict,
the target speaks free text. They share only weight loading and chat templating.
"""
