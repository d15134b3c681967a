"""``python -m metrale <command>``: the metrale-jit CLI (``python -m metrale info``: NVRTC, CUDA
headers, driver, devices and cache folder), with the same arguments as the console script."""

from metrale._cli import main

raise SystemExit(main())
