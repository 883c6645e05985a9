"""An archive built under another slangpy release, served under this one: the
run says so in one line, every kernel compiles as usual, and the results are
bit-identical to stock.

    python tests/gpu/other_release_archive.py ARCHIVE [--sample elementwise]

ARCHIVE is the sample's trace compiled by the spreplay tool of another
supported release, e.g. `spreplay compile
tests/fixtures/h200/slangpy-0.42.0/elementwise.capnp -o kernels.sprk` in a
virtualenv with slangpy 0.42.0. Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from app_output import SAMPLE_RUNS, clean_environment, outputs_identical, sample_app  # noqa: E402


def run(app: Path, flags: tuple[str, ...], out: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(app), *flags, "--out", str(out)], cwd=app.parent, text=True,
                          capture_output=True, env=clean_environment(SPREPLAY_SAMPLE_DEVICE="cuda", **env))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive", type=Path)
    parser.add_argument("--sample", default="elementwise", choices=sorted(SAMPLE_RUNS))
    options = parser.parse_args()
    folder, flags = SAMPLE_RUNS[options.sample]
    app = sample_app(folder)
    version = importlib.metadata.version("slangpy")
    work = Path(tempfile.mkdtemp(prefix="spreplay-other-release-"))
    stock = run(app, flags, work / "stock.npz")
    served = run(app, flags, work / "served.npz", SLANGPY_KERNELS=str(options.archive.resolve()),
)
    lines = [line for line in served.stderr.splitlines() if line.startswith("spreplay:")]
    refusal = [line for line in lines if "was built for" in line]
    failures = []
    if stock.returncode != 0 or served.returncode != 0:
        failures.append(f"exit codes: stock {stock.returncode}, served {served.returncode}\n{served.stderr[-2000:]}")
    if len(refusal) != 1 or f"but this process runs slangpy {version} slang " not in refusal[0]:
        failures.append(f"expected one line refusing the archive, got: {lines}")
    elif not failures and not outputs_identical(work / "stock.npz", work / "served.npz"):
        failures.append("the results differ from stock")
    print(f"slangpy {version}, archive {options.archive.name}, sample {options.sample}")
    for line in refusal:
        print(f"  {line}")
    print("\n".join(f"FAIL: {failure}" for failure in failures) or "OTHER-RELEASE ARCHIVE: PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
