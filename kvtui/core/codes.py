"""Mooncake Store return codes by name, and the codes kvtui makes itself: one table for every layer.

Mooncake store calls return negative ``ErrorCode`` values instead of raising (upstream
``mooncake-store/include/types.h``, enum ``ErrorCode``); the engine counts them by value, metrics and views
show them by name through :func:`code_name`.
"""

from __future__ import annotations

# ErrorCode values of upstream mooncake-store/include/types.h (names as in the enum).
ERROR_CODES: dict[int, str] = {
    0: "OK", -1: "INTERNAL_ERROR", -10: "BUFFER_OVERFLOW",
    -100: "SHARD_INDEX_OUT_OF_RANGE", -101: "SEGMENT_NOT_FOUND", -102: "SEGMENT_ALREADY_EXISTS",
    -103: "CLIENT_NOT_FOUND", -200: "NO_AVAILABLE_HANDLE", -300: "INVALID_VERSION", -400: "INVALID_KEY",
    -500: "WRITE_FAIL", -600: "INVALID_PARAMS", -601: "ILLEGAL_CLIENT",
    -700: "INVALID_WRITE", -701: "INVALID_READ", -702: "INVALID_REPLICA", -703: "REPLICA_IS_NOT_READY",
    -704: "OBJECT_NOT_FOUND", -705: "OBJECT_ALREADY_EXISTS", -706: "OBJECT_HAS_LEASE", -707: "LEASE_EXPIRED",
    -708: "OBJECT_HAS_REPLICATION_TASK", -709: "OBJECT_NO_REPLICATION_TASK", -710: "REPLICA_NOT_FOUND",
    -711: "REPLICA_ALREADY_EXISTS", -712: "REPLICA_IS_GONE", -713: "REPLICA_NOT_IN_LOCAL_MEMORY",
    -714: "OBJECT_REPLICA_BUSY", -800: "TRANSFER_FAIL", -801: "CHECKSUM_MISMATCH",
    -900: "RPC_FAIL", -901: "RPC_TIMEOUT",
    -1000: "ETCD_OPERATION_ERROR", -1001: "ETCD_KEY_NOT_EXIST", -1002: "ETCD_TRANSACTION_FAIL",
    -1003: "ETCD_CTX_CANCELLED", -1004: "OPLOG_ENTRY_NOT_FOUND", -1005: "K8S_LEASE_OPERATION_ERROR",
    -1006: "K8S_LEASE_NOT_FOUND", -1007: "INCOMPLETE_OPLOG_CATCH_UP", -1010: "UNAVAILABLE_IN_CURRENT_STATUS",
    -1011: "UNAVAILABLE_IN_CURRENT_MODE", -1012: "NOT_SUPPORTED",
    -1100: "FILE_NOT_FOUND", -1101: "FILE_OPEN_FAIL", -1102: "FILE_READ_FAIL", -1103: "FILE_WRITE_FAIL",
    -1104: "FILE_INVALID_BUFFER", -1105: "FILE_LOCK_FAIL", -1106: "FILE_INVALID_HANDLE",
    -1200: "BUCKET_NOT_FOUND", -1201: "BUCKET_ALREADY_EXISTS", -1202: "KEYS_EXCEED_BUCKET_LIMIT",
    -1203: "KEYS_ULTRA_LIMIT", -1300: "UNABLE_OFFLOAD", -1301: "UNABLE_OFFLOADING",
    -1400: "TASK_NOT_FOUND", -1401: "TASK_PENDING_LIMIT_EXCEEDED", -1402: "JOB_NOT_FOUND",
    -1500: "SERIALIZE_UNSUPPORTED", -1501: "SERIALIZE_FAIL", -1502: "DESERIALIZE_FAIL", -1503: "PERSISTENT_FAIL",
    -1600: "DFS_NETWORK_TIMEOUT", -1601: "DFS_SERVICE_UNAVAILABLE", -1602: "DFS_QUOTA_EXCEEDED",
    -1603: "DFS_PERMISSION_DENIED", -1604: "DFS_STALE_HANDLE", -1605: "DFS_PARTIAL_WRITE",
    -1700: "TENANT_QUOTA_EXCEEDED", -1701: "TENANT_NOT_REGISTERED", -1702: "TENANT_NOT_EMPTY",
}

# The store's codes kvtui acts on, by name.
INTERNAL_ERROR = -1  # (also what a dummy client answers once its real client is gone)
INVALID_PARAMS = -600
NO_AVAILABLE_HANDLE = -200  # the store is full and nothing can be evicted (every object leased)
OBJECT_NOT_FOUND = -704
OBJECT_ALREADY_EXISTS = -705  # a put-session start: the key exists, or another writer is storing it
RPC_FAIL, RPC_TIMEOUT = -900, -901
ETCD_TRANSACTION_FAIL = -1002  # a master's write to etcd (its OpLog, its lease) was refused
TASK_PENDING_LIMIT_EXCEEDED = -1401  # a master's OpLog queue was full: the entry was not written
MASTER_DOWN_CODES = (RPC_FAIL, RPC_TIMEOUT)  # the master does not answer
BROKEN_STORE_CODES = (*MASTER_DOWN_CODES, INTERNAL_ERROR, -800, -101)
"""Answers that mean the store stopped working rather than a page being absent: the master does not answer,
INTERNAL_ERROR / TRANSFER_FAIL / SEGMENT_NOT_FOUND (what dummy clients answer, before RPC_FAIL, once
their store node is killed). A bench's figures are void after one (``kvtui bench --trace`` stops)."""
NO_SPACE = NO_AVAILABLE_HANDLE
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.05, 1.0  # decode's wait after NO_SPACE (seconds), doubling up to the maximum

# Codes kvtui makes itself for outcomes the store reports as success or as a size.
SIZE_MISMATCH = -10001  # a read (or a ranged write) returned a size other than the layout's page_bytes
CONTENT_MISMATCH = -10002  # bytes loaded differ from what the page key says was published
CLIENT_CLOSED = -10003  # the call was refused because this client is closed
ERROR_CODES.update({SIZE_MISMATCH: "SIZE_MISMATCH", CONTENT_MISMATCH: "CONTENT_MISMATCH",
                    CLIENT_CLOSED: "CLIENT_CLOSED"})


def code_name(code: int) -> str:
    """Name of a Mooncake (or kvtui) return code, e.g. ``-704`` → ``OBJECT_NOT_FOUND``; unknown → ``E<code>``."""
    return ERROR_CODES.get(int(code), f"E{int(code)}")
