from senpi_guard.cli import main

raise SystemExit(main())
