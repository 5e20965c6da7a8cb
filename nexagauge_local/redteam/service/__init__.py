"""The audit loop's services (probe files, generate, attack), called by the CLI and by scripts;
they return typed results and raise the typed errors of app/errors.py."""
