"""The disk tier's settings: the flags' checks (one line naming the flag), and the configuration the backend
gives the store (the bucket backend, fifo, a cap per owner, buckets below one eviction batch)."""

from __future__ import annotations

import argparse
import os

import pytest

from kvtui.config.tiers import add_tier_arguments, tiers_from_args
from kvtui.core.errors import KvtuiError
from kvtui.mooncake.errors import Conflict
from kvtui.mooncake.tiers import STAGING_BYTES, DiskFolder, DiskTier, check_disk, master_flags


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_tier_arguments(p)
    p.add_argument("--segment-on", default="store")
    return p.parse_args(list(argv))


def test_no_disk_flag_means_no_disk_tier():
    plan = tiers_from_args(_args(), 64 << 20, attached=False)
    assert plan.disk_bytes == 0 and not plan.disk


@pytest.mark.parametrize("argv, attached, words", [
    (["--disk-size", "32MiB"], False, "smaller than the DRAM segment"),
    (["--disk-size", "1GiB"], True, "an attached cluster's tiers are its own"),
    (["--disk-size=-1M"], False, "must be a positive size"),
    (["--disk-size", "lots"], False, "--disk-size:"),
    (["--disk-path", "/tmp"], False, "give its size too"),
    (["--disk-size", "1GiB", "--disk-path", "/no/such/folder"], False, "not an existing folder"),
    (["--disk-size", "1000TiB"], False, "more than the free space"),
    (["--disk-size", "0"], False, "must be a positive size"),
    (["--disk-size", "1GiB", "--segment-on", "decode"], False, "cannot go with --segment-on decode"),
])
def test_bad_disk_flags_are_one_line_naming_the_flag(argv, attached, words):
    with pytest.raises(KvtuiError) as err:
        tiers_from_args(_args(*argv), 64 << 20, attached=attached)
    assert words in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith("--disk-")


def test_hot_replication_needs_an_embedded_store_of_two_segments():
    assert tiers_from_args(_args("--replicate-hot"), 64 << 20, attached=False, segments=2).replicate_hot
    with pytest.raises(KvtuiError, match="needs two segments or more"):
        tiers_from_args(_args("--replicate-hot"), 64 << 20, attached=False, segments=1)
    with pytest.raises(KvtuiError, match="embedded master's setting"):
        tiers_from_args(_args("--replicate-hot"), 64 << 20, attached=True, segments=2)


def test_a_disk_tier_below_dram_is_refused_by_the_backend_too():
    with pytest.raises(Conflict, match="wedges"):
        check_disk(32 << 20, 64 << 20)
    check_disk(64 << 20, 64 << 20)
    assert master_flags() == ["--enable_offload=true", "--offload_on_evict=true"]


def test_each_owner_gets_the_bucket_backend_with_its_share_and_small_buckets(tmp_path):
    tier = DiskTier(disk_bytes=256 << 20, folder=str(tmp_path), segment_bytes=64 << 20, page_bytes=4096)
    env = tier.owner_env("store-1", owners=2)
    assert env["MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR"] == "bucket_storage_backend"
    assert env["MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY"] == "fifo"
    assert int(env["MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE"]) == 128 << 20  # (its share)
    bucket = int(env["MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES"])
    assert 4096 <= bucket <= (32 << 20) // 20  # below one eviction batch (5 % of the objects)
    assert os.path.isdir(env["MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"]) and env["MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"] \
        .endswith("store-1")
    big = DiskTier(disk_bytes=1 << 30, folder=str(tmp_path), segment_bytes=256 << 20, page_bytes=14 << 20)
    assert int(big.owner_env("store")["MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES"]) >= 14 << 20  # one page fits
    assert big.read_bytes == STAGING_BYTES and DiskTier(1, "", 1, 100 << 20).read_bytes == 100 << 20


def test_the_disk_folder_is_made_fresh_and_removed_whole(tmp_path):
    d = DiskFolder(str(tmp_path))
    assert d.path.parent == tmp_path and d.path.name.startswith("kvtui-disk-")
    (d.path / "store").mkdir()
    (d.path / "store" / "bucket").write_bytes(b"x" * 100)
    assert d.used_bytes() == 100
    d.remove()
    assert not d.path.exists() and tmp_path.exists()  # (the folder the user gave stays)


@pytest.mark.parametrize("flags, words", [(["--replicate-hot"], "--replicate-hot is the embedded master's setting"),
                                          (["--disk-size", "1GiB"], "--disk-size sizes the embedded store's")])
def test_tier_flags_with_an_attached_cluster_are_refused_before_kvtui_reaches_for_it(flags, words, capsys):
    """No master answers at port 1: the refusal is the flag's, not "no Mooncake master answers"."""
    from kvtui.cli import main

    rc = main(["run", "--layout", "tiny", "--master", "127.0.0.1:1", "--metadata", "http://127.0.0.1:1/metadata",
               *flags])
    err = capsys.readouterr().err
    assert rc == 2 and words in err and "answers" not in err


def test_the_backends_tier_conflicts_name_the_flags():
    from kvtui.config.cluster import cluster_error_text

    text = cluster_error_text(Conflict("disk_bytes", "segment_on", "the disk tier belongs to the store nodes"))
    assert text.startswith("--disk-size cannot go with --segment-on prefill|decode: ")
    assert cluster_error_text(Conflict("disk_bytes", "store_bytes", "x")).startswith("--disk-size cannot go with "
                                                                                     "--store-size")
