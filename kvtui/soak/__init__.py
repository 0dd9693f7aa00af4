"""``kvtui soak``: hours of load with resources sampled and, with ``--chaos``, faults injected at seeded
random moments, each one's recovery timed:

- :mod:`kvtui.soak.schedule`: the fault schedule, a pure function of seed, duration and rate;
- :mod:`kvtui.soak.faults`: injecting and clearing each kind of fault (through the cluster's
  :class:`~kvtui.core.cluster_api.ClusterOps`), and timing recovery;
- :mod:`kvtui.soak.sampler`: RSS, file descriptors and TCP sockets of the process tree; the CSV series;
- :mod:`kvtui.soak.summary`: growth per hour (least-squares slopes), recovery percentiles, targets;
- :mod:`kvtui.soak.runner`: the soak itself over a live session.
"""
