"""Probe suites: the bundled suite, public suites in their own layouts and a user's own file,
read into probe records with every problem named by file, line and field."""
