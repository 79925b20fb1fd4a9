from . import console

raise SystemExit(console())
