# SPDX-License-Identifier: Apache-2.0
"""Renders bench/cold_start.py's JSON as a markdown summary and a PNG plot.

    python bench/render_report.py RESULTS.json [MORE.json ...] --markdown OUT.md --plot OUT.png

RESULTS.json is bench/cold_start.py's output. Several runs of one commit on
one machine (for example one per workload group) are rendered as one report;
bench/slangtorch_runs.py's slangtorch.json may be among them. Every number is the median over the rounds of its run; ratios are
taken between configurations measured in the same rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phases import PHASE_LABELS, PHASES, dominant_phase  # noqa: E402

CONFIG_LABELS = {
    "cold": "(a) stock, cold",
    "cuda_warm": "stock, CUDA cache only",
    "warm": "(b) stock, shader + CUDA caches",
    "warm_all": "(b+) stock, all caches",
    "spreplay": "(c) spreplay",
    "spreplay_module_cache": "(c+) spreplay + module cache",
}
PHASE_COLORS = ["#9e9e9e", "#4e79a7", "#f28e2b", "#edc948", "#e15759", "#76b7b2", "#d3d3d3"]


def config_labels(data: dict[str, Any]) -> dict[str, str]:
    """CONFIG_LABELS, marked where a warm configuration compiled instead of
    hitting its shader cache."""
    labels = {}
    for config in data["configs"]:
        runs = [r[config] for w in data["workloads"].values() for r in w.get("rounds", []) if config in r]
        missed = sum(1 for run in runs if run["shader_cache_hits"] < run["call_sites"])
        warm = config in ("warm", "warm_all")
        labels[config] = CONFIG_LABELS[config] + (f" [shader cache missed in {missed} of {len(runs)} runs]"
                                                  if warm and missed else "")
    return labels


def median_of(rounds: list[dict[str, Any]], config: str, metric: Callable[[dict[str, Any]], float | None]) -> float:
    values = [v for r in rounds if config in r and (v := metric(r[config])) is not None]
    return statistics.median(values) if values else float("nan")


def fmt_s(seconds: float) -> str:
    return f"{seconds:.2f}" if seconds >= 0.095 or seconds == 0 else f"{seconds * 1000:.0f} ms"


class Report:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.configs: list[str] = data["configs"]
        self.labels = config_labels(data)
        self.workloads = {name: w for name, w in data["workloads"].items() if w.get("rounds")}
        # Ratios against spreplay, for the stock configurations that were measured.
        self.ratio_configs = [c for c in ("cold", "warm", "warm_all") if c in self.configs and "spreplay" in self.configs]
        self.lines: list[str] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.add("| " + " | ".join(header) + " |", "|" + " --- |" * len(header))
        self.add(*("| " + " | ".join(row) + " |" for row in rows))
        self.add("")

    def ready(self, rounds: list[dict[str, Any]], config: str) -> float:
        return median_of(rounds, config, lambda run: run["ready_to_all_first_results_s"])

    def render(self) -> str:
        system = self.data["system"]
        rounds = {len(w["rounds"]) for w in self.workloads.values()}
        self.add(f"# Cold start: stock slangpy, its caches, and spreplay ({system['gpu']})", "",
                 f"{system['date']}, commit {system['commit']}; driver {system['driver']}, slangpy "
                 f"{system['slangpy']}, {system['spreplay']}, Python {system['python']}, {system['cpus']} CPUs. "
                 f"Each cell is the median of {'/'.join(map(str, sorted(rounds)))} fresh processes per configuration, "
                 f"configurations interleaved within each round; `bench/cold_start.py`.", "")
        self.headline()
        self.device_ready()
        self.phases()
        self.steady()
        self.record_and_compile()
        self.slowest_call_sites("synthetic")
        self.slangtorch()
        return "\n".join(self.lines)

    def slangtorch(self) -> None:
        st = self.data.get("slangtorch")
        if st is None:
            return
        self.add("## (d) slangtorch on the same 30 kernels", "")
        if not st["available"]:
            self.add(f"Not measured: {st['reason']}", "")
            return
        self.add(f"slangtorch {st['slangtorch']}, torch {st['torch']}. `bench/workloads/slangtorch/kernels.slang` holds "
                 "the synthetic workload's functions behind 30 `[CudaKernel]` entry points in one module; "
                 "`loadModule` compiles all of them with slangc and nvcc into one torch extension, cached next to "
                 "the file. Per way of calling `loadModule`: a cold build on a fresh copy of the file, then fresh "
                 "processes on the same copy.", "")

        def cell(runs: list[dict[str, Any]], key: str) -> str:
            values = [run[key] for run in runs if key in run]
            return fmt_s(statistics.median(values)) if values else "-"

        keys = ("start_to_device_ready_s", "import_torch_s", "load_module_s", "ready_to_all_first_results_s")
        rows, rebuilt_notes = [], []
        for name, variant in slangtorch_variants(st).items():
            title = f"`{' '.join(variant['flags'])}`" if variant.get("flags") else "defaults"
            if "error" in variant:
                first_line = (variant["error"].splitlines() or ["?"])[0]
                rows.append([title, f"failed: {first_line[:200]}", *["-"] * 5])
                continue
            cold, warm = variant["cold"], variant["warm"]
            rows.append([title, "cold build", *(cell([cold], k) for k in keys),
                         f"{cold.get('steady_ms_per_pass', float('nan')):.2f}"])
            rows.append([title, f"same file, fresh processes (median of {len(warm)})", *(cell(warm, k) for k in keys),
                         f"{statistics.median(run['steady_ms_per_pass'] for run in warm):.2f}"])
            rebuilt = [run for run in warm if run["load_module_s"] > 0.5 * cold["load_module_s"]]
            if rebuilt:
                rebuilt_notes.append(f"{title}: in {len(rebuilt)} of {len(warm)} later processes `loadModule` took "
                                     "more than half the cold build's time, so slangtorch rebuilt instead of loading "
                                     "its cached extension.")
        self.table(["`app.py` flags", "", "process start to device ready (s)", "of which import torch (s)",
                    "`loadModule` (s)", "device ready to all first results (s)", "steady (ms per pass)"], rows)
        if rebuilt_notes:
            self.add(*rebuilt_notes, "")
        synthetic = self.workloads.get("synthetic")
        if synthetic and "spreplay" in self.configs:
            ready = {c: self.ready(synthetic["rounds"], c) for c in self.configs}
            self.add("Same commit and machine, slangpy on the synthetic workload (device ready to all first results): " + ", ".join(
                f"{self.labels[c]} {v:.2f} s" for c, v in ready.items()) + ".", "")

    def headline(self) -> None:
        self.add("## Device ready to the first result of every call site (s)", "")
        rows = []
        for name, w in self.workloads.items():
            r = w["rounds"]
            cells = [fmt_s(self.ready(r, c)) for c in self.configs]
            spreplay = self.ready(r, "spreplay")
            identical = all(run["outputs_identical_to_cold"] for rnd in r for run in rnd.values())
            ratios = [f"{self.ready(r, c) / spreplay:.1f}x" for c in self.ratio_configs]
            rows.append([name, str(r[0]["cold"]["call_sites"]), *cells, *ratios, "yes" if identical else "**no**"])
        self.table(["workload", "call sites", *(self.labels[c] for c in self.configs),
                    *(f"{self.labels[c].split()[0]} / (c)" for c in self.ratio_configs), "outputs bit-identical"],
                   rows)
        served = [f"{name}: {median_of(w['rounds'], c, lambda run: run.get('spreplay_served')):.0f} of "
                  f"{w['rounds'][0][c]['call_sites']}" for name, w in self.workloads.items()
                  for c in ("spreplay_module_cache",) if c in w["rounds"][0]]
        if served:
            self.add(f"Kernels served in (c+), which is not strict: {'; '.join(served)}.", "")
        if any("shader cache missed" in label for label in self.labels.values()):
            self.add("[shader cache missed]: in those runs not every call site hit the shader cache, so they compiled; "
                     "medians then mix warm and compiling runs. Shader-cache hits per run: " + "; ".join(
                         f"{name} {c}: " + ", ".join(f"{r[c]['shader_cache_hits']}/{r[c]['call_sites']}"
                                                     for r in w["rounds"] if c in r)
                         for name, w in self.workloads.items() for c in ("warm", "warm_all") if c in self.configs)
                     + ".", "")

    def device_ready(self) -> None:
        self.add("## Process start to device ready (s)", "",
                 "Interpreter start, `import slangpy` and device creation (which includes slang-rhi compiling its "
                 "own kernels); the same work in every configuration.", "")
        rows = []
        for name, w in self.workloads.items():
            r = w["rounds"]
            rows.append([name, *(fmt_s(median_of(r, c, lambda run: run["start_to_device_ready_s"]))
                                 for c in self.configs),
                         fmt_s(median_of(r, "cold", lambda run: run["import_slangpy_s"])),
                         fmt_s(median_of(r, "cold", lambda run: run["device_create_s"]))])
        self.table(["workload", *(self.labels[c] for c in self.configs), "of which import slangpy (cold)",
                    "device creation (cold)"], rows)

    def phases(self) -> None:
        self.add("## Where the time goes, per phase (s)", "",
                 "Sums over call sites, from device ready to the last first result. \"app's module loads\" is the "
                 "Slang front end of the modules the app loads itself; \"everything else\" is what is left: the "
                 "app's input setup and uploads, argument marshalling, the kernels, copies back, the app's numpy "
                 "checks, and time in slangpy and slang-rhi that the compilation reports do not split out.", "")
        for name, w in self.workloads.items():
            r = w["rounds"]
            rows = []
            for config in self.configs:
                medians = {p: median_of(r, config, lambda run, p=p: run["phases_s"][p]) for p in PHASES}
                rows.append([self.labels[config], *(fmt_s(medians[p]) for p in PHASES),
                             PHASE_LABELS[dominant_phase(medians)]])
            self.add(f"### {name}", "")
            self.table(["configuration", *(PHASE_LABELS[p] for p in PHASES), "dominant"], rows)

    def steady(self) -> None:
        self.add("## Steady state (ms per pass over every call site)", "",
                 "Passes after the first, in the same processes; these must not differ between configurations.", "")
        rows = [[name, *(f"{median_of(w['rounds'], c, lambda run: run['steady_ms_per_pass']):.2f}"
                         for c in self.configs)] for name, w in self.workloads.items()]
        self.table(["workload", *(self.labels[c] for c in self.configs)], rows)

    def record_and_compile(self) -> None:
        self.add("## Recording and compiling", "")
        rows = []
        for name, w in self.workloads.items():
            cold_first = self.ready(w["rounds"], "cold")
            compile_ = w["compile"]
            rows.append([name, fmt_s(cold_first), fmt_s(w["record"]["ready_to_all_first_results_s"]),
                         f"{w['trace_bytes'] / 1024:.0f}", str(compile_["kernels"]), f"{compile_['wall_s']:.1f}",
                         f"{compile_['sass_s_total']:.1f}", f"{compile_['archive_bytes'] / 1024:.0f}"])
        jobs = next(iter(self.workloads.values()))["compile"]["jobs"]
        arches = next(iter(self.workloads.values()))["compile"]["arches"]
        self.table(["workload", "stock cold (s)", "recording (s)", "trace (KB)", "kernels",
                    f"`spreplay compile` wall, {jobs} jobs (s)", "SASS build time (s)", "archive (KB)"], rows)
        self.add(f"SASS for {', '.join(arches)} plus PTX; no compile cache. The recording run is one process, "
                 "the stock column a median.", "")

    def slowest_call_sites(self, name: str, count: int = 8) -> None:
        w = self.workloads.get(name)
        if not w:
            return
        first = w["rounds"][0]
        cold = first["cold"]["per_call_site"]
        served = {row["call_site"]: row for row in first.get("spreplay", {}).get("per_call_site", [])}
        warm = {row["call_site"]: row for row in first.get("warm", {}).get("per_call_site", [])}

        def total(row: dict[str, Any]) -> float:
            return sum(row[k] for k in ("python_build_s", "front_end_s", "link_s", "codegen_slang_s",
                                        "codegen_downstream_s", "module_load_s"))

        self.add(f"## The {count} slowest call sites of `{name}`, cold (s, round 1)", "")
        rows = []
        for row in sorted(cold, key=total, reverse=True)[:count]:
            rows.append([f"`{row['call_site']}`", fmt_s(row["python_build_s"]), fmt_s(row["front_end_s"]),
                         fmt_s(row["link_s"]), fmt_s(row["codegen_slang_s"]), fmt_s(row["codegen_downstream_s"]),
                         fmt_s(row["module_load_s"]), fmt_s(total(row)),
                         fmt_s(total(warm[row["call_site"]])) if row["call_site"] in warm else "-",
                         fmt_s(total(served[row["call_site"]])) if row["call_site"] in served else "-"])
        self.table(["call site", "Python build", "front end", "link", "Slang codegen", "NVRTC", "module load",
                    "total cold", "total warm", "total spreplay"], rows)


def slangtorch_variants(st: dict[str, Any]) -> dict[str, Any]:
    """Results written before slangtorch was measured per way of calling
    `loadModule` hold one cold and one warm list: the defaults."""
    if "variants" in st:
        return st["variants"]
    return {"default": {"flags": [], "cold": st["cold"], "warm": st["warm"]}}


def is_slangtorch_result(data: dict[str, Any]) -> bool:
    return "workloads" not in data and "available" in data


def merge_results(runs: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """One report's data from runs of the same commit and machine: the
    workloads of every cold_start run, and slangtorch from wherever it was
    measured."""
    for path, data in runs:
        if "workloads" not in data and not is_slangtorch_result(data):
            raise ValueError(f"{path}: neither bench/cold_start.py nor bench/slangtorch_runs.py results")
    benches = [(path, data) for path, data in runs if "workloads" in data]
    if not benches:
        raise ValueError("no bench/cold_start.py results among the inputs")
    first_path, first = benches[0]
    merged = {**first, "workloads": {}}
    merged.pop("slangtorch", None)
    for path, data in runs:
        system = data.get("system", {})
        for key in ("gpu", "driver", "commit", "slangpy", "spreplay", "python"):
            if system.get(key) != first["system"].get(key):
                raise ValueError(f"{path}: {key} is {system.get(key)!r}, not {first['system'].get(key)!r} as in "
                                 f"{first_path}")
        if "workloads" in data:
            for key in ("configs", "repeat"):
                if data[key] != first[key]:
                    raise ValueError(f"{path}: {key} {data[key]} differs from {first[key]} in {first_path}")
            for name, workload in data["workloads"].items():
                if name in merged["workloads"]:
                    raise ValueError(f"{path}: workload {name} is in more than one input")
                merged["workloads"][name] = workload
        slangtorch = data.get("slangtorch") if "workloads" in data else data
        if slangtorch is None:
            continue
        slangtorch = {k: v for k, v in slangtorch.items() if k != "system"}
        held = merged.get("slangtorch")
        if held is not None and held["available"] and slangtorch["available"]:
            raise ValueError(f"{path}: slangtorch results are in more than one input")
        if held is None or not held["available"]:
            merged["slangtorch"] = slangtorch
    return merged


def plot(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads, configs = report.workloads, report.configs
    fig, axes = plt.subplots(len(workloads), 1, figsize=(10, 1.3 + 0.3 * len(configs) * len(workloads)), squeeze=False)
    for ax, (name, w) in zip(axes[:, 0], workloads.items()):
        left = [0.0] * len(configs)
        for phase, color in zip(PHASES, PHASE_COLORS):
            widths = [max(0.0, median_of(w["rounds"], c, lambda run: run["phases_s"][phase])) for c in configs]
            ax.barh(range(len(configs)), widths, left=left, color=color, label=PHASE_LABELS[phase])
            left = [a + b for a, b in zip(left, widths)]
        for y, (x, config) in enumerate(zip(left, configs)):
            ax.text(x, y, f" {report.ready(w['rounds'], config):.2f} s", va="center", fontsize=8)
        ax.set_yticks(range(len(configs)), [report.labels[c] for c in configs], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(left) * 1.15)
        ax.set_title(f"{name} ({w['rounds'][0]['cold']['call_sites']} call sites)", fontsize=9, loc="left")
        ax.tick_params(axis="x", labelsize=8)
    axes[-1, 0].set_xlabel("seconds from device ready to the first result of every call site: bars are each "
                           "phase's median, labels the median total", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8, frameon=False)
    system = report.data["system"]
    fig.suptitle(f"{system['gpu']}, {system['date']}, commit {system['commit']}", fontsize=8, y=0.005, va="bottom")
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.savefig(path, dpi=130)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--markdown", type=Path, required=True)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    try:
        data = merge_results([(path, json.loads(path.read_text())) for path in args.results])
    except (OSError, ValueError) as error:
        print(f"render_report: {error}", file=sys.stderr)
        return 1
    report = Report(data)
    args.markdown.write_text(report.render() + "\n")
    if args.plot:
        try:
            plot(report, args.plot)
        except ImportError as error:
            print(f"render_report: no plot ({error}); pip install matplotlib for one", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
