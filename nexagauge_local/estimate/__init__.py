"""`estimate`: what a run would cost the judge, known before any weights are loaded."""
