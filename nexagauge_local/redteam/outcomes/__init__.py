"""The audit's rates: what each counts, over how many, with what interval and coverage."""
