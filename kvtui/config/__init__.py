"""The door: command-line flags become frozen dataclasses here, once.

Each module declares one group of flags (``add_*_arguments``) and turns them into a typed value
(``*_from_args``), raising :class:`~kvtui.core.errors.KvtuiError` (one line naming the flag, exit 2) for a
bad value. :func:`kvtui.config.plan.plan_from_args` combines them into a :class:`~kvtui.config.plan.RunPlan`
whose derived values (the workload's working set, the store's size, the worker client) are explicit fields.

Only the commands (:mod:`kvtui.commands`) and this package read the parsed ``argparse.Namespace``, and nothing
writes into it; everything below takes the dataclasses.

- :mod:`~kvtui.config.paths`: file and folder flags, output checks before any work;
- :mod:`~kvtui.config.layout`: the KV page layout, the model and the page keys;
- :mod:`~kvtui.config.estimate`: the TTFT estimate (GPU, MFU, measured prefill rate);
- :mod:`~kvtui.config.workload`: a synthetic scenario or a trace replay, and trace synthesis;
- :mod:`~kvtui.config.cluster`: the store (embedded or attached), the worker topology, emulated hosts, remote
  workers;
- :mod:`~kvtui.config.exports`: the Prometheus exporter and the per-request log;
- :mod:`~kvtui.config.screen`: the monitor's screen (headless, size, refresh rate, screenshots);
- :mod:`~kvtui.config.plan`: :class:`RunPlan`, what ``run``, ``watch``, ``soak`` and ``serve`` run.
"""
