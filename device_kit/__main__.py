"""`python -m device_kit ...` (from the repository root): the kit's command line."""

from device_kit.cli import main

main()
