#!/usr/bin/env python3
"""The fit behind the NCCL model's calibration (docs/nccl.md): one set of per-protocol values shared by every
validated class of system (hop latency scale, bandwidth efficiency, ramp bytes: System's defaults in
emulator/nccl_model.h), and one call overhead per class (in its preset), chosen together by a seeded random
hill climb over `fabemu bench collective --compare` on the published nccl-tests tables. The model is the C++
one (this script only writes trial presets and reads the comparison), so there is one implementation.

It starts from the values in emulator/nccl_model.h and the presets, and prints the best it finds (to be
written back by hand: the header's kFitted* values, the presets' own keys, tests/nccl/test_collective_bench.cpp's
table and docs/nccl.md's). Objective, averaged over the tables: median |busbw error| (>= 64 KiB) + 0.5 x (max |busbw error| above 20%)
+ 0.2 x median |time error| (< 64 KiB). PCIe without P2P is left out (not a goal of the model; docs/nccl.md).

Usage: bench/nccl_fit.py [--fabemu build/host/fabemu] [--iterations 1500] [--seed 1]
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("FABEMU_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
TABLES = os.path.join(SHARED, "calibration", "nccl-tests")
# class: (preset, [(table, collective, extra options)], per-class keys fitted)
CLASSES = {
    "a100": ("a100_8x_nvswitch.yaml", [("a100_1n8_allreduce_azure-nda100v4.tsv", "all_reduce", []),
                                       ("a100_1n8_allreduce_oci-bmgpu48.tsv", "all_reduce", [])], ["call_overhead_us"]),
    "h100": ("h100_8x_nvswitch.yaml", [("h100_1n8_allreduce_nvls_azure-ndh100v5.tsv", "all_reduce", ["--algo", "nvls"])],
             ["call_overhead_us"]),
    "p5": ("p5_2node_efa.yaml", [("h100_2n16_allreduce_aws-p5-efa.tsv", "all_reduce", [])], ["call_overhead_us"]),
    "p4de": ("p4de_2node_efa.yaml", [("a100_2n16_allreduce_aws-p4de-efa.tsv", "all_reduce", [])], ["call_overhead_us"]),
    "tcpxo": ("a3mega_2node_tcpxo.yaml", [("h100_2n16_allgather_gcp-a3mega-tcpxo.tsv", "all_gather", [])],
              ["call_overhead_us", "net_latency_us"]),
}
SHARED_KEYS = ["hop_latency_scale", "bandwidth_efficiency", "ramp_bytes"]
ERR = re.compile(r"median ([0-9.]+)%, max ([0-9.]+)%")


def preset_text(path, values):
    """The preset with the nccl section's fitted keys replaced (or appended: nccl is the last section)."""
    lines = [l for l in open(path).read().splitlines() if not re.match(r"\s+(%s):" % "|".join(values), l)]
    for k, v in values.items():
        lines.append("  %s: %s" % (k, "[%s]" % ", ".join("%.6g" % x for x in v) if isinstance(v, list) else "%.6g" % v))
    return "\n".join(lines) + "\n"


def errors(fabemu, cls, params, tmp):
    preset, tables, own = CLASSES[cls]
    values = {k: params[k] for k in SHARED_KEYS}
    values.update({k: params["%s.%s" % (cls, k)] for k in own})
    trial = os.path.join(tmp, preset)
    with open(trial, "w") as f:
        f.write(preset_text(os.path.join(ROOT, "traces", "systems", preset), values))
    out = []
    for table, coll, extra in tables:
        r = subprocess.run([fabemu, "bench", "collective", coll, "-q", "-s", trial, "--compare",
                            os.path.join(TABLES, table)] + extra, capture_output=True, text=True, check=True)
        bus = ERR.search([l for l in r.stdout.splitlines() if l.startswith("# busbw")][0])
        tim = ERR.search([l for l in r.stdout.splitlines() if l.startswith("# time")][0])
        out.append((table, float(bus.group(1)) / 100, float(bus.group(2)) / 100, float(tim.group(1)) / 100))
    return out


def objective(rows):
    return sum(m + 0.5 * max(0.0, mx - 0.2) + 0.2 * t for _, m, mx, t in rows) / len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabemu", default=os.path.join(ROOT, "build", "host", "fabemu"))
    ap.add_argument("--iterations", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not os.path.isdir(TABLES):
        sys.exit("error: %s is absent" % TABLES)
    random.seed(a.seed)
    # The start: the values in emulator/nccl_model.h (the last fit), and each preset's own.
    header = open(os.path.join(ROOT, "emulator", "nccl_model.h")).read()
    params = {}
    for key, name in (("hop_latency_scale", "HopLatencyScale"), ("bandwidth_efficiency", "BandwidthEfficiency"),
                      ("ramp_bytes", "RampBytes")):
        m = re.search(r"kFitted%s\{([^}]*)\}" % name, header)
        params[key] = [float(x) for x in m.group(1).split(",")]
    for cls, (preset, _, own) in CLASSES.items():
        text = open(os.path.join(ROOT, "traces", "systems", preset)).read()
        for k in own:
            m = re.search(r"^\s+%s:\s*([0-9.]+)" % k, text, re.M)
            params["%s.%s" % (cls, k)] = float(m.group(1)) if m else 0.0
    with tempfile.TemporaryDirectory() as tmp:
        def score(p):
            rows = [r for cls in CLASSES for r in errors(a.fabemu, cls, p, tmp)]
            return objective(rows), rows
        best, rows = score(params)
        for _ in range(a.iterations):
            trial = {k: (list(v) if isinstance(v, list) else v) for k, v in params.items()}
            key = random.choice(list(trial))
            if isinstance(trial[key], list):
                i = random.randrange(3)
                x = trial[key][i]
                if key == "ramp_bytes":
                    x = max(0.0, (x if x > 0 else 65536) * random.choice([0.25, 0.5, 0.8, 0.9, 1.1, 1.25, 2, 4]))
                else:
                    x = x * random.choice([0.8, 0.9, 0.95, 1.05, 1.1, 1.25])
                    x = min(x, 1.0) if key == "bandwidth_efficiency" else x
                trial[key][i] = x
            else:
                trial[key] = max(0.0, trial[key] + random.choice([-5, -2, -1, 1, 2, 5]))
            s, r = score(trial)
            if s < best:
                best, params, rows = s, trial, r
        print("objective %.4f" % best)
        for k, v in params.items():
            print("%s: %s" % (k, [round(x, 4) for x in v] if isinstance(v, list) else round(v, 3)))
        for table, m, mx, t in rows:
            print("  %-46s busbw median %5.1f%% max %5.1f%% | time median %5.1f%%" % (table, m * 100, mx * 100, t * 100))


if __name__ == "__main__":
    main()
