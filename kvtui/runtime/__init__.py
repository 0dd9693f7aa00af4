"""Process and log-folder plumbing shared by the request pipeline (:mod:`kvtui.engine`) and the backend
(:mod:`kvtui.mooncake`): children that never outlive kvtui (:mod:`~kvtui.runtime.procs`), where native logs go
(:mod:`~kvtui.runtime.logs`), and the CPU and memory of the processes kvtui runs (:mod:`~kvtui.runtime.processes`).
It imports only :mod:`kvtui.core`."""
