"""The live session: a started engine, its driver, aggregator, samplers and frame producer, behind the interfaces
the monitor, the recorder and the exporters read (:mod:`kvtui.live.session`), and the checks a control passes
before it changes the workload (:mod:`kvtui.live.controls`)."""

from kvtui.live.session import HALT_WAIT_S, LAYOUT_WAIT_S, LiveSession, RunCounts

__all__ = ["HALT_WAIT_S", "LAYOUT_WAIT_S", "LiveSession", "RunCounts"]
