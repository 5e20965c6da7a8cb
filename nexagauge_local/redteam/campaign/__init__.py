"""Attack campaigns: the probes under attack strategies, answered by the target in batches
(static strategies in one round; the attacker-driven ones round by round)."""
