from nexagauge_local.cli import main

main()
