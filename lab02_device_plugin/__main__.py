from lab02_device_plugin.cli import main

raise SystemExit(main())
