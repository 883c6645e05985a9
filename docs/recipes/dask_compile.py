# SPDX-License-Identifier: Apache-2.0
"""Compiles traces into one archive on a Dask cluster: one task per shard
(`spreplay compile --shard K/N`), then `spreplay merge`.

    python dask_compile.py TRACE... -o kernels.sprk --shards 8 --cache /shared/spreplay-cache \
        [--scheduler tcp://scheduler:8786] [--arch 80,90]

Without --scheduler it starts a LocalCluster, one worker process per shard:
Dask's local mode, for trying the recipe on one machine. Every worker must see
the traces, the cache and the output's folder at the same paths (a shared
file system), and have spreplay and slangpy installed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import spreplay
from dask.distributed import Client, LocalCluster


def compile_shard(shard: int, shards: int, traces: list[str], output_dir: str, cache: str,
                  arches: list[int] | None) -> str:
    """Runs on a worker: builds shard `shard` of `shards` next to the output."""
    archive = Path(output_dir) / f"shard-{shard}-of-{shards}.sprk"
    spreplay.compile(traces, archive, shard=(shard, shards), cache=cache, arches=arches, jobs=1)
    return str(archive)


def compile_on_cluster(client: Client, traces: list[str], output: Path, shards: int, cache: str,
                       arches: list[int] | None = None) -> Path:
    futures = client.map(compile_shard, range(1, shards + 1), shards=shards, traces=traces,
                         output_dir=str(output.parent), cache=cache, arches=arches, pure=False)
    archives = client.gather(futures)
    try:
        return spreplay.merge(archives, output)
    finally:
        for archive in archives:
            Path(archive).unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--cache", required=True, help="a compile cache every worker shares")
    parser.add_argument("--scheduler", help="a running Dask scheduler's address; default: a LocalCluster")
    parser.add_argument("--arch", help="e.g. 80,90; default: spreplay's")
    args = parser.parse_args()
    arches = [int(a) for a in args.arch.split(",")] if args.arch else None
    output = args.output.resolve()
    if args.scheduler:
        with Client(args.scheduler) as client:
            compile_on_cluster(client, args.traces, output, args.shards, args.cache, arches)
    else:
        with LocalCluster(n_workers=args.shards, threads_per_worker=1, processes=True) as cluster, \
                Client(cluster) as client:
            compile_on_cluster(client, args.traces, output, args.shards, args.cache, arches)
    print(f"{output}: {len(spreplay.inspect(output).kernels)} kernels from {args.shards} shards")


if __name__ == "__main__":
    main()
