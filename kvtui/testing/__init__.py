"""Store-less frame sources for tests, snapshots and ``kvtui report``: the same frames a live run makes."""
