"""Screen refresh limits of the monitor, importable without loading Textual (the command line reads them)."""

MAX_HZ = 15.0  # the ceiling: repaint at most 15 times a second whatever the request rate
DEFAULT_HZ = 4.0  # each repaint of a busy 120×40 screen costs Textual ~25 ms of CPU: at 10 Hz the monitor
# took about a third of a core from the workload it shows on a 2-core machine (``kvtui bench --ui``)
UI_NICE = 10  # the monitor's thread runs this much nicer than the engine's threads and workers: on a busy
# machine the workload it shows gets the CPU first (``kvtui bench --ui``)
