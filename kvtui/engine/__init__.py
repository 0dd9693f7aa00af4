"""The request pipeline: the engine (submit, route, hold, drain, results, layout switches), the driver that feeds
it a workload (and applies the typed controls it is handed), the prefill and decode worker processes and their
typed protocol and pipes, page keys, page contents and their verification, and the connector over the store
client. The store's cluster is not the pipeline's: it reaches Mooncake only through
:mod:`kvtui.mooncake.client` (an import-linter contract)."""
