"""tcplab beside other packet-level simulators on the same dumbbell (run by hand, never by
`make test`): htsim (csg-htsim, the C++ simulator of data-centre research), built here from
its public source, and ns-3 from its PyPI wheel. Prints each one's CPU time, delivered
packets per CPU-second and tcplab's speed ratio.

    .venv/bin/python benchmarks/peers/run.py --htsim-src PATH [--ns3] [--flows 10]
        [--rate-mbps 100] [--delay-ms 10] [--queue-pkts 100] [--duration-s 60]

`--htsim-src`: a checkout of csg-htsim (or a bare clone of it): its `sim/` is copied into
`--workdir` and built there with its own Makefile (`libhtsim.a`, -O3), then linked with
`htsim_dumbbell.cpp` (this folder's own dumbbell). Nothing of htsim enters this repository.
`--ns3`: the `ns3` wheel is installed with pip into a virtualenv under `--workdir` (not the
project's), and `ns3_dumbbell.py` runs there.

The dumbbell: FLOWS bulk flows over one bottleneck (RATE, DELAY one way, a DropTail queue of
QUEUE packets) and an ACK path of the same rate, for DURATION. Each simulator runs its own TCP
(tcplab: Linux Reno with SACK; htsim: its NewReno-like TcpSrc without SACK or delayed ACKs;
ns-3: its default NewReno with SACK), so what is compared is the cost of a delivered packet.
Times are CPU seconds (getrusage of the child), which a loaded machine disturbs far less than
wall time; "whole process" includes each one's start-up (tcplab: the interpreter, the
scenario checks; ns-3: importing its bindings).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the data packet on the wire (tcplab: MSS 1448 + 52 bytes of headers)
PACKET_BYTES = 1500
MSS_BYTES = 1448


@dataclass(frozen=True)
class Dumbbell:
    flows: int
    rate_mbps: float
    delay_ms: float
    queue_pkts: int
    duration_s: float


@dataclass(frozen=True)
class Measured:
    simulator: str
    core_cpu_s: float  # the simulation alone (tcplab: the core call; others: = process)
    process_cpu_s: float  # the whole process
    delivered_pkts: float

    @property
    def pkts_per_cpu_s(self) -> float:
        return self.delivered_pkts / self.core_cpu_s if self.core_cpu_s > 0 else float("nan")


def _child_cpu(argv: list[str], **kwargs: object) -> tuple[subprocess.CompletedProcess[str], float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, cpu


def tcplab_toml(d: Dumbbell) -> str:
    return (
        f'name = "peers"\nduration = "{d.duration_s}s"\nseed = 1\n'
        f'[bottleneck]\nrate = "{d.rate_mbps}Mbps"\ndelay = "{d.delay_ms}ms"\n'
        f'queue = "{d.queue_pkts}pkts"\n'
        '[access]\nrate = "100Gbps"\ndelay = "1us"\n'
        f'[[flows]]\ncca = "reno"\ncount = {d.flows}\n'
    )


#: In a fresh interpreter: the core call alone, timed with the process's CPU clock.
_TCPLAB_CORE = """
import json, sys, time
from tcplab import _core
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalized_json
text = normalized_json(load_scenario(sys.argv[1], []))
started = time.process_time()
out = json.loads(_core.run_json_series(text, None))
cpu = time.process_time() - started
print(json.dumps({"cpu_s": cpu, "bytes": sum(f["bytes_delivered"] for f in out["flows"])}))
"""


def run_tcplab(d: Dumbbell, work: Path) -> Measured:
    scenario = work / "peers.toml"
    scenario.write_text(tcplab_toml(d))
    done, _ = _child_cpu([sys.executable, "-c", _TCPLAB_CORE, str(scenario)])
    core = json.loads(done.stdout.strip().splitlines()[-1])
    tcplab = Path(sys.executable).with_name("tcplab")
    _, process_cpu = _child_cpu([str(tcplab), "run", str(scenario), "--json"])
    return Measured("tcplab", core["cpu_s"], process_cpu, core["bytes"] / MSS_BYTES)


def build_htsim(src: Path, work: Path) -> Path:
    """Copy csg-htsim's `sim/` into `work` (from a checkout, or with `git archive` from a
    bare clone), build `libhtsim.a` with its Makefile, link our dumbbell."""
    binary = work / "htsim_dumbbell"
    sim = work / "htsim" / "sim"
    if not (sim / "libhtsim.a").exists():
        shutil.rmtree(work / "htsim", ignore_errors=True)
        (work / "htsim").mkdir(parents=True)
        if (src / "sim").is_dir():
            shutil.copytree(src / "sim", sim)
        else:  # a bare clone
            archive = subprocess.run(
                ["git", "--git-dir", str(src), "archive", "HEAD", "sim"],
                capture_output=True,
                check=True,
            )
            subprocess.run(["tar", "-x"], input=archive.stdout, cwd=work / "htsim", check=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.run(
            ["make", "-j", jobs, "libhtsim.a"], cwd=sim, check=True, stdout=subprocess.DEVNULL
        )
    cpp = HERE / "htsim_dumbbell.cpp"
    subprocess.run(
        [
            "g++",
            "-O3",
            "-std=c++11",
            "-I",
            str(sim),
            str(cpp),
            str(sim / "libhtsim.a"),
            "-o",
            str(binary),
        ],
        check=True,
    )
    return binary


def run_htsim(binary: Path, d: Dumbbell) -> Measured:
    argv = [
        str(binary),
        str(d.flows),
        str(d.rate_mbps),
        str(d.delay_ms * 1000),
        str(d.queue_pkts),
        str(d.duration_s),
        str(PACKET_BYTES),
    ]
    done, cpu = _child_cpu(argv)
    values = dict(line.split() for line in done.stdout.splitlines() if line.count(" ") == 1)
    return Measured("htsim", cpu, cpu, int(values["delivered_bytes"]) / PACKET_BYTES)


def install_ns3(work: Path) -> Path:
    venv = work / "ns3-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "ns3"], check=True)
    return python


def run_ns3(python: Path, d: Dumbbell) -> Measured:
    argv = [
        str(python),
        str(HERE / "ns3_dumbbell.py"),
        str(d.flows),
        str(d.rate_mbps),
        str(d.delay_ms),
        str(d.queue_pkts),
        str(d.duration_s),
        str(MSS_BYTES),
    ]
    done, cpu = _child_cpu(argv)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return Measured("ns-3", out["run_cpu_s"], cpu, out["delivered_bytes"] / MSS_BYTES)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flows", type=int, default=10)
    p.add_argument("--rate-mbps", type=float, default=100.0)
    p.add_argument("--delay-ms", type=float, default=10.0)
    p.add_argument("--queue-pkts", type=int, default=100)
    p.add_argument("--duration-s", type=float, default=60.0)
    p.add_argument("--htsim-src", type=Path, help="csg-htsim checkout or bare clone")
    p.add_argument("--ns3", action="store_true", help="install the ns3 wheel and run it too")
    p.add_argument("--workdir", type=Path, default=Path("build/peers"))
    args = p.parse_args()
    d = Dumbbell(args.flows, args.rate_mbps, args.delay_ms, args.queue_pkts, args.duration_s)
    work = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows = [run_tcplab(d, work)]
    if args.htsim_src:
        rows.append(run_htsim(build_htsim(args.htsim_src.resolve(), work), d))
    if args.ns3:
        rows.append(run_ns3(install_ns3(work), d))
    ours = rows[0]
    print(
        f"dumbbell: {d.flows} flows, {d.rate_mbps:g} Mbit/s, {d.delay_ms:g} ms one way, "
        f"queue {d.queue_pkts} packets, {d.duration_s:g} s simulated; "
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs"
    )
    head = (
        "simulator",
        "sim CPU s",
        "process CPU s",
        "delivered pkts",
        "pkts/CPU-s",
        "tcplab faster (sim)",
        "tcplab faster (process)",
    )
    print(" | ".join(head))
    ours_per_pkt = ours.process_cpu_s / ours.delivered_pkts
    for r in rows:
        print(
            " | ".join(
                (
                    r.simulator,
                    f"{r.core_cpu_s:.3f}",
                    f"{r.process_cpu_s:.3f}",
                    f"{r.delivered_pkts:,.0f}",
                    f"{r.pkts_per_cpu_s:,.0f}",
                    f"{ours.pkts_per_cpu_s / r.pkts_per_cpu_s:.2f}x",
                    f"{(r.process_cpu_s / r.delivered_pkts) / ours_per_pkt:.2f}x",
                )
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
