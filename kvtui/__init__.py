"""kvtui: drive shared-prefix workloads through a real Mooncake Store and watch KV page reuse live.

Importing this package must not import Mooncake (``kvtui --help`` works without the wheel).
"""

__version__ = "0.1.0"
