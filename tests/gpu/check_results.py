#!/usr/bin/env python3
"""Checks `memsnap replay --backend cuda --json` output against the simulator's prediction.
Exit 1 on a mismatch. Usage: check_results.py RESULT.json [--tolerance 0.05]"""
import argparse
import json
import sys

MIB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--tolerance", type=float, default=0.05,
                    help="allowed relative excess of the driver's peak over the prediction")
    ap.add_argument("--slack-mib", type=float, default=64,
                    help="allowed absolute excess (driver bookkeeping, page tables)")
    a = ap.parse_args()
    rep = json.load(open(a.result))
    failures = []
    seen = set()
    native_pred = None
    print(f"GPU {rep['gpu']['ordinal']}: {rep['gpu']['name']}, "
          f"{rep['gpu']['total'] / MIB:.0f} MiB, {rep['gpu']['free_before'] / MIB:.0f} MiB free")
    for c in rep["configs"]:
        name = f"{c['label']} [{c['allocator']}]"
        seen.add(c["allocator"])
        drv = c["driver_peak"]
        print(f"  {name}: driver peak {drv / MIB:.1f} MiB, allocator {c['peak_reserved']}, "
              f"predicted {c['predicted_peak_reserved']}, pool reserved high "
              f"{c['pool_reserved_high']}, peak live {c['peak_live'] / MIB:.1f} MiB, "
              f"ooms {c['ooms']}, alloc time {c['alloc_calls_ns'] / 1e6:.2f} ms")
        if c["error"]:
            failures.append(f"{name}: driver error: {c['error']}")
            continue
        if c["ooms"]:
            failures.append(f"{name}: {c['ooms']} OOMs on this card (use SCALE=0.5 or a bigger GPU)")
        if c["allocator"] in ("native", "expandable"):
            pred = c["predicted_peak_reserved"]
            if c["allocator"] == "native":
                native_pred = pred
            if c["peak_reserved"] != pred:
                failures.append(f"{name}: allocator peak {c['peak_reserved']} != simulator {pred}")
            limit = pred * (1 + a.tolerance) + a.slack_mib * MIB
            if not (pred <= drv + a.slack_mib * MIB and drv <= limit):
                failures.append(f"{name}: driver peak {drv} outside [{pred}, {limit:.0f}]")
        else:
            hi, used = c["pool_reserved_high"], c["pool_used_high"]
            if hi is None or used is None:
                failures.append(f"{name}: pool attributes unavailable")
                continue
            if used < c["peak_live"]:
                failures.append(f"{name}: pool used high {used} < peak live {c['peak_live']}")
            if hi < used:
                failures.append(f"{name}: pool reserved high {hi} < used high {used}")
            if native_pred and hi > 1.5 * native_pred:
                failures.append(f"{name}: pool reserved high {hi} > 1.5 x native prediction")
    for want in ("native", "expandable", "cudaMallocAsync"):
        if want not in seen:
            failures.append(f"no {want} configuration in the result")
    for f in failures:
        print("MISMATCH:", f)
    print("OK" if not failures else f"{len(failures)} mismatch(es)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
