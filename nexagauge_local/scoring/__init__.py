"""Pure scoring math, testable without any model."""
