"""Output files: case reports, per-node summaries, the run manifest and the HTML report."""
