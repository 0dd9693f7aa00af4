"""The driver: feeds a workload's requests into an engine (:class:`~kvtui.core.engine_api.RequestEngine`),
honouring arrival times, concurrency, pauses and master outages, and hands typed controls
(:mod:`kvtui.core.controls`) to one control handler on its feeder thread before the next request is drawn.

A run ends in one of two ways. When the workload runs out or ``max_requests`` were issued, the requests
submitted finish (a drain). When :meth:`Driver.stop` is called or ``duration_s`` is reached, the run is
abandoned at once: decode drops the submitted requests whose reload has not started, and the ones under way
(at most ``concurrency``) are not waited for (:attr:`Driver.abandoned`), so a run ends within ~0.1 s whatever
the page size or the store's state."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import Callable, Iterable, Iterator

from kvtui.core.codes import BROKEN_STORE_CODES, MASTER_DOWN_CODES, NO_SPACE, code_name
from kvtui.core.controls import Control
from kvtui.core.engine_api import Dropped, Lost, RequestEngine, WorkerError, WorkerReplacement
from kvtui.core.events import EngineEvent, RequestResult
from kvtui.core.subscribers import Unsubscribe

REMOUNT_S = 1.5  # after the master answers again, clients remount their segments by themselves within this
PROBE_EVERY_S = 1.0  # a broken-store answer other than RPC_FAIL/RPC_TIMEOUT probes the master at most this often


LOOKAHEAD = 8  # requests submitted beyond ``concurrency``: ~30 ms of work at 300 req/s, so decode does not run dry
# while the parent's GIL is busy with a repaint of the monitor; knob changes and pauses apply within as many
# requests, and decode holds them itself when the master is down


class Driver:
    """Feeds requests from a workload into an engine, honouring arrival times and concurrency.

    ``requests``: an iterable of ``workload.Request`` (a synthetic workload iterates forever);
    ``on_result`` / ``on_event``: callbacks invoked from the driver's threads; ``on_control``: the one
    handler of the typed controls given to :meth:`send` (:data:`kvtui.core.controls.Control`), called on the
    feeder thread, one message at a time in the order sent, before the next request is drawn (also while
    paused or during an outage); it may call :meth:`wait_idle`, and an exception it raises ends the run
    (:attr:`error`). Thread-safe: :meth:`pause`, :meth:`resume`, :meth:`stop`, :meth:`send`.
    ``max_requests`` / ``duration_s`` bound the run; ``duration_s`` counts from ``duration_from`` (a
    ``time.monotonic()`` instant, e.g. when the command started: ``kvtui run --duration`` bounds the whole
    command) or, when None, from :meth:`start`, user pauses excluded, master outages included.
    ``rerun_lost``: a request a worker's death interrupted (the engine's :class:`~kvtui.engine.engine.Lost`)
    is submitted again, to whichever worker the router picks (:attr:`rerun` counts them); otherwise, and
    once the feeder is done, it is counted in :attr:`lost`. ``store_answers()``: whether the store takes
    requests now (the cluster's ``reachable``: an outage ends when it is True again); ``ha``: the store is an HA
    cluster (an outage is then a failover under way).

    Two threads: the feeder draws a request when one of ``concurrency × decode workers + LOOKAHEAD`` slots
    is free (so a knob change applies to the next request drawn) and submits it; the collector takes finished requests
    from the engine, reports them, and frees their slots. Only the feeder writes to the engine (submits,
    holds and the final drain), so the collector never waits on a pipe the workers may be waiting on.
    """

    def __init__(self, engine: RequestEngine, requests: Iterable, on_result: Callable[[RequestResult], None],
                 on_event: Callable[[EngineEvent], None] | None = None, *,
                 on_control: Callable[[Control], None] | None = None, concurrency: int = 1,
                 max_requests: int | None = None, duration_s: float | None = None,
                 duration_from: float | None = None, rerun_lost: bool = False,
                 store_answers: Callable[[], bool] = lambda: True, ha: bool = False):
        self.engine = engine
        self._store_answers = store_answers  # (the cluster's reachable(): the store takes requests)
        self._is_ha = ha
        self._iter: Iterator = iter(requests)
        self._on_result = on_result
        self._on_event = on_event or (lambda e: None)
        self._on_control = on_control
        self.concurrency = max(1, int(concurrency))
        self.max_requests = max_requests
        self.duration_s = duration_s
        self.duration_from = duration_from
        options = engine.options  # (concurrency is per decode worker; remote decode workers may join)
        workers = options.decode_workers + options.remote_slots
        self._slots = threading.Semaphore(self.concurrency * workers + LOOKAHEAD)
        self._controls: queue.Queue[Control] = queue.Queue()
        self._running = threading.Event()
        self._running.set()
        self._state_lock = threading.RLock()
        self._user_paused = False
        self._outage_since: float | None = None
        self._stop = threading.Event()
        self._abandon = threading.Event()  # stop or duration: requests under way are not waited for
        self._fed = threading.Event()  # the feeder will submit nothing more
        self.done = threading.Event()
        self.issued = 0
        self.completed = 0
        self.dropped = 0  # submitted, then reported dropped unrun (the run was abandoned, or ended in an outage)
        self.lost = 0  # of those, lost when a worker died (the engine rebuilt its workers: replace_dead_workers)
        self.rerun = 0  # requests a worker's death interrupted that were submitted again (rerun_lost)
        self.rerun_lost = rerun_lost
        self._again: deque = deque()  # interrupted requests for the feeder to submit again (they keep their slot)
        self._again_lock = threading.RLock()  # (the feeder's last submissions hold it while they submit)
        self.abandoned = 0  # submitted and never reported: under way (or not yet dropped) when the run was abandoned
        self.error: BaseException | None = None
        self._paused_total = 0.0
        self._paused_at: float | None = None
        self._threads: list[threading.Thread] = []
        self.backoffs = 0  # results with NO_AVAILABLE_HANDLE: the decode worker backed off after each
        self._want_hold = False  # engine hold wanted (a master outage); the feeder sends each change: decode
        self._hold_epoch = 0  # may also have held by itself, so an outage's end is always sent as a release
        self._sent_epoch = 0
        self._outage_total = 0.0  # seconds of ended outages (the duration bound counts them, arrivals do not)
        self._unsubscribe: Unsubscribe | None = None  # from the engine's replacements, while the run goes
        self._probed_at = 0.0  # when a broken-store answer last made the collector probe the master
        self._last_ok_end = 0.0  # engine time the last request without a broken-store answer finished (collector)
        self._outage_began: float | None = None  # engine time the outage's first failed call began (collector)

    # -- controls ---------------------------------------------------------------------------------------
    def _set_running(self) -> None:
        with self._state_lock:
            run = not (self._user_paused or self._outage_since is not None) or self._stop.is_set()
            if run and not self._running.is_set():
                self._paused_total += time.monotonic() - (self._paused_at or time.monotonic())
                self._paused_at = None
                self._running.set()
            elif not run and self._running.is_set():
                self._paused_at = time.monotonic()
                self._running.clear()

    def pause(self) -> None:
        """Stop issuing new requests (in-flight ones finish)."""
        self._user_paused = True
        self._set_running()

    def resume(self) -> None:
        """Resume issuing; time spent paused does not count against arrival times."""
        self._user_paused = False
        self._set_running()

    @property
    def paused(self) -> bool:
        """True while the user paused the workload."""
        return self._user_paused

    @property
    def outage(self) -> bool:
        """True while the master is unreachable (issuing is held until it answers again)."""
        return self._outage_since is not None

    def send(self, control: Control) -> None:
        """Queue ``control`` for the ``on_control`` handler (called on the feeder thread before the next
        request is drawn); ``TypeError`` if it is not a :data:`~kvtui.core.controls.Control` message,
        ``RuntimeError`` if this driver has no handler."""
        if not isinstance(control, Control):
            raise TypeError(f"not a control message: {control!r}")
        if self._on_control is None:
            raise RuntimeError("this driver was built without an on_control handler")
        self._controls.put(control)

    def wait_idle(self, timeout_s: float) -> bool:
        """From the ``on_control`` handler: wait until every submitted request has finished (nothing more is
        submitted meanwhile: the feeder is the caller); False after ``timeout_s`` (e.g. a master outage holds
        them) or once the run is abandoned (:meth:`stop`)."""
        deadline = time.monotonic() + timeout_s
        while self.completed + self.dropped < self.issued:
            if time.monotonic() >= deadline or self.done.is_set() or self._abandon.is_set():
                return self.completed + self.dropped >= self.issued
            time.sleep(0.005)
        return True

    def stop(self) -> None:
        """Abandon the run: issue nothing more, have decode drop the submitted requests whose reload has not
        started, and stop waiting for those under way (their results, if they come, are not reported; the
        engine discards them); :attr:`done` is set within ~0.1 s, with :attr:`abandoned` counting the requests
        submitted and not reported."""
        self._abandon.set()
        self._stop.set()
        self._set_running()

    def _replaced(self, rep: WorkerReplacement) -> None:
        codes = ", ".join(f"{name} exit code {code}" for name, code in zip(rep.dead, rep.exit_codes)) or rep.reason
        fate = "submitted again" if self.rerun_lost else "lost (counted, not retried)"
        self._on_event(EngineEvent("error", self.engine.now(), f"worker died ({codes}): every worker restarted in "
                                  f"{rep.took_s:.1f} s; {rep.lost} requests submitted and unfinished {fate}",
                                  {"lost": rep.lost, "dead": list(rep.dead)}))

    # -- outages ----------------------------------------------------------------------------------------
    def _note_call_times(self, result: RequestResult) -> None:
        """Keep when the store last answered well and, in an outage, when its first failed call began: the
        earliest start of a request that failed with a broken-store answer, not before the last request that
        finished without one (a call to a dead master can block ~4.3 s before it fails)."""
        broken = any(c in result.codes for c in BROKEN_STORE_CODES)
        if not broken:
            self._last_ok_end = max(self._last_ok_end, result.t_end)
            return
        began = max(result.t_start, self._last_ok_end)
        if self._outage_since is not None and (self._outage_began is None or began < self._outage_began):
            self._outage_began = began

    def _check_outage(self, codes: dict[int, int], t_start: float | None = None) -> None:
        """On RPC_FAIL / RPC_TIMEOUT, hold issuing and watch the master until it answers again. So also on
        another broken-store answer (:data:`~kvtui.core.codes.BROKEN_STORE_CODES`: INTERNAL_ERROR, TRANSFER_FAIL,
        SEGMENT_NOT_FOUND) when the master does not answer a probe (at most one probe a second): a dummy client
        whose real client lost its (non-HA) master answers INTERNAL_ERROR, never RPC_FAIL, and a run that went
        on would wait ~4.3 s per call without saying why. With the master answering, those codes are a store
        node's fault (its pages are gone), counted, not an outage.

        Calls to a dead (e.g. SIGKILLed) master fail at once at first, then block ~4.3 s each, so issuing more
        requests would only pile up errors. The outage is dated from its first failed call (``t_start``, engine
        time, of the failing request; :meth:`_note_call_times`), which may have begun seconds before its answer.
        """
        if self._stop.is_set() or self._outage_since is not None:
            return
        down = [c for c in MASTER_DOWN_CODES if c in codes]
        if not down:
            broken = [c for c in BROKEN_STORE_CODES if c in codes]
            now = time.monotonic()
            if not broken or now - self._probed_at < PROBE_EVERY_S:
                return
            self._probed_at = now
            if self._store_answers():
                return
            down = broken
        with self._state_lock:
            if self._outage_since is not None:
                return
            self._outage_since = time.monotonic()
            now = self.engine.now()
            began = now if t_start is None else min(now, max(t_start, self._last_ok_end))
            self._outage_began = began
            self._want_hold = True
            self._hold_epoch += 1
        self._set_running()
        name = code_name(down[0])
        late = f" (its first failed call began {now - began:.1f} s before)" if now - began >= 0.1 else ""
        text = (f"no master serves ({name}): the leader is gone or hung, a failover is under way; dispatch held{late}"
                if self._ha() else f"store unreachable ({name}): dispatch held{late}")
        self._on_event(EngineEvent("outage", now, text, {"code": name, "began_s": round(began, 3)}))
        threading.Thread(target=self._watch_master, name="kvtui-outage", daemon=True).start()

    def _ha(self) -> bool:
        """The store is an HA cluster (its leader changes; its keys survive with OpLog)."""
        return self._is_ha

    def _watch_master(self) -> None:
        while not self._stop.is_set():
            if self._store_answers():
                self._stop.wait(REMOUNT_S)  # clients remount their segments by themselves within ~1.5 s
                held = time.monotonic() - (self._outage_since or time.monotonic())
                now = self.engine.now()
                down = max(held, now - (self._outage_began if self._outage_began is not None else now))
                with self._state_lock:
                    self._outage_since = None
                    self._outage_began = None
                    self._outage_total += held
                    self._want_hold = False
                    self._hold_epoch += 1
                self._set_running()
                self._on_event(EngineEvent("outage", now, (
                    f"the store answers again {down:.1f} s after its first failed call (a master serves, the "
                    "segments mounted on it); dispatch resumed with the keys the new leader has" if self._ha() else
                    f"master back after {down:.1f} s; dispatch resumed (a restarted master has lost every key: hit "
                    "rate restarts from zero)"), {"down_s": round(down, 3), "held_s": round(held, 3)}))
                return
            self._stop.wait(0.5)

    # -- threads ----------------------------------------------------------------------------------------
    def start(self) -> "Driver":
        """Start the feeder and collector threads; a worker that died before the run began (``WorkerError``
        from the engine's ``begin_run``) ends the run at once instead, as its :attr:`error`. Until the run
        is done, each rebuild of the engine's workers is an ``error`` event of this run."""
        self._start_t = time.monotonic()
        try:
            self.engine.begin_run(self.concurrency)
        except WorkerError as exc:  # a worker died before the run began: the run ends at once with that error
            self.error = exc
            self._fed.set()
            self.done.set()
            return self
        self._unsubscribe = self.engine.subscribe_replacement(self._replaced)
        for name, target in (("feeder", self._feed), ("collector", self._collect)):
            t = threading.Thread(target=target, name=f"kvtui-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def run(self) -> None:
        """Start and block until the workload ends, the bounds are reached, or :meth:`stop`."""
        self.start()
        while not self.done.wait(0.2):
            pass
        if self.error is not None:
            raise self.error

    def elapsed(self) -> float:
        """Seconds on the arrival clock, what a request's ``arrival_s`` is compared with: since :meth:`start`,
        user pauses and master outages excluded."""
        return self._elapsed()

    def _elapsed(self) -> float:
        paused = self._paused_total + ((time.monotonic() - self._paused_at) if self._paused_at else 0.0)
        return time.monotonic() - self._start_t - paused

    def _run_time(self) -> float:
        """Seconds the run has lasted for ``duration_s``: since ``duration_from`` (or :meth:`start`), user
        pauses excluded, master outages included."""
        with self._state_lock:
            down = self._outage_total + (time.monotonic() - self._outage_since if self._outage_since else 0.0)
        before = self._start_t - self.duration_from if self.duration_from is not None else 0.0
        return self._elapsed() + down + max(0.0, before)

    def _duration_over(self) -> bool:
        """True once ``duration_s`` is reached; the run is then abandoned like :meth:`stop`."""
        if self.duration_s is not None and self._run_time() >= self.duration_s:
            self._abandon.set()
            return True
        return False

    def _sync_hold(self) -> None:
        with self._state_lock:
            epoch, want = self._hold_epoch, self._want_hold
        if epoch != self._sent_epoch:
            self.engine.hold(want)
            self._sent_epoch = epoch

    def _drain_controls(self) -> None:
        self._submit_again()
        self._sync_hold()
        while True:
            try:
                control = self._controls.get_nowait()
            except queue.Empty:
                return
            assert self._on_control is not None  # (control() queues one only with a handler)
            self._on_control(control)

    def _run_again(self, req) -> bool:
        """From the collector: queue ``req`` (interrupted by a worker's death) for the feeder, unless the
        feeder is done; whether it was queued."""
        with self._again_lock:
            if self._fed.is_set() or self._abandon.is_set():
                return False
            self._again.append(req)
            self.rerun += 1
            return True

    def _submit_again(self) -> None:
        """From the feeder: submit the interrupted requests again (each still holds its slot)."""
        while True:
            with self._again_lock:
                if not self._again:
                    return
                req = self._again.popleft()
            self.engine.submit(req)

    def _feed(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._slots.acquire(timeout=0.1):
                    self._drain_controls()
                    if self._duration_over():
                        break
                    continue
                while not self._running.wait(0.1):  # paused or outage: knob changes still apply (and log)
                    self._drain_controls()
                    if self._duration_over():
                        break
                self._drain_controls()
                if self._stop.is_set():
                    break
                if self.max_requests is not None and self.issued >= self.max_requests:
                    break
                if self._duration_over():
                    break
                req = next(self._iter, None)
                if req is None:
                    break
                if req.arrival_s is not None:
                    over = False  # the duration may end while the next row waits for its arrival time
                    while not self._stop.is_set() and not over:
                        wait = req.arrival_s - self._elapsed()
                        if wait <= 0 or not self._running.is_set():
                            break
                        self._stop.wait(min(wait, 0.1))
                        self._drain_controls()
                        over = self._duration_over()
                    while not over and not self._running.wait(0.1):  # an outage or a pause began meanwhile
                        self._drain_controls()
                        over = self._duration_over()
                    if over or self._stop.is_set():
                        break
                self.engine.submit(req)
                self.issued += 1
        except BaseException as exc:  # a workload error ends the run; reported by run()
            if not self._abandon.is_set():  # (a submit racing the engine's stop is no error; the collector's
                self.error = self.error or exc  # error, when it came first, is the cause: it stays)
        finally:
            with self._again_lock:  # (a request interrupted after this is counted lost: the feeder is done)
                try:
                    if not self._abandon.is_set():
                        self._submit_again()
                    if self._abandon.is_set():
                        self.engine.hold(True)  # a drain while held: decode drops its queue unrun
                    self.engine.drain()
                except Exception:  # the engine is gone already: nothing is queued
                    pass
                self._fed.set()

    def _collect(self) -> None:
        try:
            while not (self._fed.is_set() and self.completed + self.dropped >= self.issued):
                abandon = self._abandon.is_set()  # then report the results already here, and end once
                result = self.engine.next_result(timeout_s=0.02 if abandon else 0.1)  # the feeder is done
                if result is None:
                    if abandon and self._fed.is_set():
                        break
                    continue
                if isinstance(result, Lost) and self.rerun_lost and self._run_again(result.req):
                    continue
                if isinstance(result, Dropped):
                    self.dropped += 1
                    self.lost += isinstance(result, Lost)
                    self._slots.release()
                    continue
                self.completed += 1
                self._on_result(result)
                self._note_call_times(result)
                self._check_outage(result.codes, result.t_start)
                self.backoffs += NO_SPACE in result.codes
                self._slots.release()
        except BaseException as exc:
            if not self._abandon.is_set():  # once abandoned, workers being stopped are no error
                self.error = self.error or exc
            self._abandon.set()
            self._stop.set()
        finally:
            self.abandoned = max(0, self.issued - self.completed - self.dropped)
            if self._unsubscribe is not None:
                self._unsubscribe()
            self.done.set()
