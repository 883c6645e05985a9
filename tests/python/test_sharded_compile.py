"""`spreplay compile --shard K/N` on several machines, then `spreplay merge`:
the same archive, byte for byte, as one compile of the same traces."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, inspect_json, run_spreplay

TRACES = [str(FIXTURES / "elementwise.capnp"), str(FIXTURES / "autodiff.capnp")]
SHARDS = 3


def test_merged_shards_are_byte_identical_to_one_compile(tmp_path: Path) -> None:
    # A compile cache shared by every machine (a network file system, say):
    # Slang's module serializer is not byte-reproducible, and the cache keeps
    # the first IR verified for each module.
    cache = tmp_path / "cache"
    common = ["--arch", "90", "--cache", str(cache), "--jobs", "2"]
    shards = []
    for k in range(1, SHARDS + 1):
        shard = tmp_path / f"shard-{k}.sprk"
        proc = run_spreplay("compile", *TRACES, "-o", str(shard), "--shard", f"{k}/{SHARDS}", *common)
        assert f"(shard {k} of {SHARDS})" in proc.stderr, proc.stderr
        shards.append(shard)
    single = tmp_path / "single.sprk"
    run_spreplay("compile", *TRACES, "-o", str(single), *common)
    merged = tmp_path / "merged.sprk"
    proc = run_spreplay("merge", *map(str, shards), "-o", str(merged))
    assert f"from {SHARDS} archives" in proc.stderr

    keys = [{k["key"] for k in inspect_json(shard)["kernels"]} for shard in shards]
    recorded = {k["key"] for t in TRACES for k in inspect_json(Path(t))["kernels"]}
    assert sum(len(k) for k in keys) == len(recorded) and set().union(*keys) == recorded
    assert sum(1 for k in keys if k) >= 2  # the kernels really were spread
    assert merged.read_bytes() == single.read_bytes()


def test_merge_takes_traces_or_archives_not_both(tmp_path: Path) -> None:
    archive = tmp_path / "a.sprk"
    run_spreplay("compile", TRACES[0], "-o", str(archive), "--arch", "90", "--no-modules")
    proc = run_spreplay("merge", str(archive), TRACES[0], "-o", str(tmp_path / "m.sprk"), check=False)
    assert proc.returncode == 2 and "not both" in proc.stderr
    assert not (tmp_path / "m.sprk").exists()


def test_a_bad_shard_is_a_usage_error(tmp_path: Path) -> None:
    for shard in ("0/3", "4/3", "2", "a/b"):
        proc = run_spreplay("compile", TRACES[0], "-o", str(tmp_path / "x.sprk"), "--shard", shard, check=False)
        assert proc.returncode == 2 and "--shard needs K/N" in proc.stderr, (shard, proc.stderr)
