"""Defaults that several layers share, each defined once: the model name hashed into keys, the embedded
store's size, prompt length, and the monitor's refresh limits (importable without Textual or Mooncake)."""

DEFAULT_MODEL = "demo-model"  # hashed into every page key unless --model says otherwise
DEFAULT_STORE_BYTES = 1 << 30  # the embedded store node's segment (--store-size 1GiB)
DEFAULT_STORE_SIZE_TEXT = "1GiB"  # the same, as the command line writes it
MIN_SEGMENT_BYTES = 16 << 20  # Mooncake refuses smaller segments ("Total size must be at least 16777216")
DEFAULT_PROMPT_PAGES = 8  # without --prompt-tokens, prompts are this many pages long (also after a layout switch)
WATCH_LAYOUT = "tiny"  # kvtui watch (and serve) with no flags: 4 KiB pages, whose working set fits the default
# segment whatever key is pressed, so the first screen starts on a laptop with 4 GiB free and its store never
# evicts; `--layout seed` runs the demo card's 14 MiB pages, with a store sized to several GiB

MAX_HZ = 15.0  # repaint at most 15 times a second whatever the request rate
DEFAULT_HZ = 4.0  # each repaint of a busy screen costs Textual tens of ms of CPU: a faster default would take a
# large share of a core from the workload the monitor shows (``kvtui bench --ui`` measures the cost)
UI_NICE = 10  # the monitor's thread runs this much nicer than the engine's threads and workers: on a busy
# machine the workload it shows gets the CPU first (``kvtui bench --ui``)
