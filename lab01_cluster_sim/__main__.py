from lab01_cluster_sim.cli import main

raise SystemExit(main())
