"""The engine: everything that touches processes and the store — the cluster (master, metadata server, store
node), the store client, keys and page contents, the connector, the prefill and decode worker processes and
their protocol, the engine that starts them, the driver that feeds them a workload (and applies the typed
controls it is handed), and the samplers of process and store health."""
