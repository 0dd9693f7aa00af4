"""Views that take kvtui's figures out of the terminal: a Prometheus exporter and a per-request log.

Like the monitor (:mod:`kvtui.tui`) they only read: frames (:class:`~kvtui.metrics.frame.Frame`) and request
results (:class:`~kvtui.core.events.RequestResult`), never the store or the engine. :mod:`kvtui.live` wires
them to a running session, :mod:`kvtui.commands.export_args` to the command line.

* :mod:`kvtui.export.names`: every exported metric once (name, type, unit, labels, help, source), also the
  docs' reference table (``python -m kvtui.export.names``).
* :mod:`kvtui.export.prometheus`: the exporter, served with ``prometheus-client``.
* :mod:`kvtui.export.request_log`: one row per request, streamed to CSV (or Parquet with ``pyarrow``).
"""
