"""What ``kvtui bench`` measures, with same-run baselines, one module per bench:

- :mod:`kvtui.bench.reuse`: the demo card's reload and publish figures against a plain ``batch_get_into``,
  one loopback TCP stream and memcpy (:mod:`kvtui.bench.baselines`);
- :mod:`kvtui.bench.trace`: a trace's replay rate through the engine against a bare loop of the same store
  calls (:mod:`kvtui.bench.bare`);
- :mod:`kvtui.bench.ui`: the workload rate with the live monitor against the same workload without it;
- :mod:`kvtui.bench.engines`: how every bench starts its engines, and its progress lines;
- :mod:`kvtui.bench.targets`: the ratio each bench is judged against.
"""
