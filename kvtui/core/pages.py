"""Page states: what happened to one KV page of a request (one cell of the page grid).

The engine writes one state per page into :attr:`kvtui.core.events.RequestResult.states`; metrics count
them and the page grid draws them. One byte per page (the enum's value).
"""

from __future__ import annotations

from enum import IntEnum


class PageState(IntEnum):
    """What happened to one page of a request (one cell of the page grid)."""

    HIT = 0  # loaded from the store and verified: prefill skipped for it
    PUBLISHED = 1  # miss: computed by prefill and stored
    PRESENT = 2  # miss: computed, but already present in the store (whoever stored it): not stored again
    PARTIAL = 3  # trailing partial page (or beyond the cacheable part): never keyed, always computed
    FAILED = 4  # a store call failed (see the request's codes)
    EVICTED = 5  # the probe said present, the read said gone: evicted between probe and read
    MISMATCH = 6  # loaded, but the size or bytes were not what the layout and key say
    COMPUTED = 7  # miss: computed and not published (decode role, or publish skipped)
    HIT_DISK = 8  # loaded from the store's disk tier and verified: prefill skipped for it


HITS = frozenset({PageState.HIT, PageState.HIT_DISK})
"""The states of a reloaded page, from memory or from the disk tier."""

TIERS = ("memory", "disk")
"""The store's tiers a page is reloaded from, in the order every output lists them: its DRAM segments, then its
disk (SSD) tier (a store without one has memory only)."""
TIER_OF = {PageState.HIT: "memory", PageState.HIT_DISK: "disk"}
"""The tier of a reloaded page's state."""
