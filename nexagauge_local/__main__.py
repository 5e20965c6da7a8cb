from nexagauge_local.cli import main

if __name__ == "__main__":  # a spawned child re-imports the main module
    main()
