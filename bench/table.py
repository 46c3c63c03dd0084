"""One table over every workload, batch and policy that bench/run_bench.sh measured: MixLab
and PyTorch ms/step (PyTorch's best eager variant and its best whole-step CUDA graph),
MixLab's ratio to each, MixLab's mixed/fp32 ratio, and each row's roofline floor
from counted FLOPs and bytes against the ceilings measured in the same call.
Usage: table.py RESULTS_DIR. Reads what the parts left there (ceilings.json,
W_summary.json, W_pytorch.json, W_mixlab_<batch>.json, failures.txt, env.txt; anything
missing shows as "-"), prints the table and writes bench_table.txt, bench_table.md and
bench_table.json (all raw numbers) into RESULTS_DIR. Standard library only."""
import json
import math
import pathlib
import re
import sys

# MixLab policy -> (PyTorch policy, GEMM dtype of its ceiling, bytes per stored value).
POLICIES = {
    "fp32": ("fp32", "fp32", 4),
    "tf32": ("tf32", "tf32", 4),
    "mixed_fp16": ("amp_fp16", "fp16", 2),
    "mixed_bf16": ("amp_bf16", "bf16", 2),
    # bf16 storage, fp8 GEMM operands; PyTorch has no eager fp8 policy (its columns stay "-").
    "mixed_fp8": ("amp_fp8", "fp8", 2),
}
WORKLOADS = ("w1", "w2", "w3")


def load_json(path, problems):
    try:
        text = path.read_text()
        if not text.strip():
            problems.append(f"{path.name}: empty")
            return None
        return json.loads(text)
    except FileNotFoundError:
        problems.append(f"{path.name}: missing")
    except (OSError, ValueError) as e:
        problems.append(f"{path.name}: unreadable ({e})")
    return None


# A language model's counts are per token, and a step of batch B reads B x bptt tokens.
TOKENS_PER_SAMPLE = {"w3": 35}


def shape_elems(text):
    """Elements of a shape such as "32x32x3"; a sequence's per-step shape ("T x 650") counts
    one time step, and a token input ("T tokens") one token."""
    parts = [v.strip() for v in str(text).split("x")]
    dims = [int(v) for v in parts if v.isdigit()]
    return math.prod(dims) if dims else 1


def gemm_output_elems(layers):
    """Per-sample output elements of every dense and convolution layer, residual blocks'
    bodies and shortcuts included."""
    total = 0
    for l in layers:
        if l.get("is_gemm"):
            total += shape_elems(l["output_shape"])
        total += gemm_output_elems(l.get("body", [])) + gemm_output_elems(l.get("shortcut", []))
    return total


def first_gemm_flops(layers):
    """Forward FLOPs per sample of the first dense or convolution layer in execution order,
    the one that reads the model's input; 0 when there is none."""
    for l in layers:
        if l.get("is_gemm"):
            return l["flops"]
        inner = first_gemm_flops(l.get("body", [])) or first_gemm_flops(l.get("shortcut", []))
        if inner:
            return inner
    return 0


def model_counts(summary):
    return {"params": summary["total_params"],
            "forward_flops_per_sample": summary["total_flops"],
            "first_gemm_flops_per_sample": first_gemm_flops(summary["layers"]),
            "input_elems_per_sample": shape_elems(summary["input"]),
            "gemm_output_elems_per_sample": gemm_output_elems(summary["layers"])}


def step_flops(counts, batch):
    """Forward plus the two backward GEMMs (data and weight gradient), each as costly as
    the forward, less the first layer's data gradient: the input needs none, and without
    this the floor came out above measured fp32 times (W1 batch 4096: 120% of "floor")."""
    return (3.0 * counts["forward_flops_per_sample"] - counts["first_gemm_flops_per_sample"]) * batch


def step_bytes(counts, batch, s):
    """A lower bound on the bytes one training step moves through device memory, with P
    parameters, s bytes per stored value (4 fp32/tf32, 2 mixed), B the batch, I the input
    and A the dense/conv outputs per sample (every other layer assumed fused into them):
      weights read in forward and again in backward            2 P s
      gradients written, then read by the optimizer            2 P s
      fp32 momentum read + written                             8 P
      fp32 weights (the master copy under mixed) read + written 8 P
      the 16-bit weight copy written (mixed only)              P s
      input read once; each layer's output written once and read once   B (I + 2 A) s
    So 32 bytes per parameter under fp32 and tf32, 26 under mixed, plus the activations."""
    p = counts["params"]
    by = 2 * p * s + 2 * p * s + 8 * p + 8 * p + (p * s if s < 4 else 0)
    by += batch * (counts["input_elems_per_sample"] + 2 * counts["gemm_output_elems_per_sample"]) * s
    return float(by)


def mixlab_times(root, work, problems):
    """{batch: {policy: median ms}} from the compare logs; failed runs are left out. The
    fp8 compares (W_mixlab_fp8_<batch>.json) give their mixed_fp8 run only: the other
    policies' rows come from the main compare of that batch."""
    out = {}
    for log in root.glob(f"{work}_mixlab_*.json"):
        m = re.fullmatch(rf"{work}_mixlab_(fp8_)?(\d+)", log.stem)
        if not m:
            continue
        data = load_json(log, problems)
        if not data:
            continue
        b = int(m.group(2))
        for r in data.get("runs", []):
            if m.group(1) and r.get("policy") != "mixed_fp8":
                continue
            s = r.get("summary")
            if s and s.get("median_step_ms"):
                out.setdefault(b, {})[r["policy"]] = s["median_step_ms"]
            else:
                problems.append(f"{log.name}: no timing for {r.get('policy')}")
    return out


def fmt(v, spec=".3f", none="-"):
    return none if v is None else format(v, spec)


def main():
    root = pathlib.Path(sys.argv[1])
    problems = []
    failures = []
    if (root / "failures.txt").exists():
        failures = [l for l in (root / "failures.txt").read_text().splitlines() if l.strip()]
    env = (root / "env.txt").read_text() if (root / "env.txt").exists() else ""

    ceil = load_json(root / "ceilings.json", problems) or {}
    tflops = {k: v["tflops"] for k, v in (ceil.get("gemm") or {}).items()}
    copy_gbs = (ceil.get("copy") or {}).get("gbs")
    problems += [f"ceilings: {e}" for e in ceil.get("errors", [])]

    rows, models, gpu, torch_version = [], {}, ceil.get("gpu"), ceil.get("torch")
    for work in WORKLOADS:
        have = list(root.glob(f"{work}_*"))
        if not have:
            continue
        summary = load_json(root / f"{work}_summary.json", problems)
        counts = None
        if summary:
            try:
                counts = model_counts(summary)
            except (KeyError, ValueError) as e:
                problems.append(f"{work}_summary.json: unexpected layout ({e})")
        models[work] = counts
        pt_data = load_json(root / f"{work}_pytorch.json", problems) or {}
        pt = pt_data.get("ms_per_step", {})
        gpu = gpu or pt_data.get("gpu")
        torch_version = torch_version or pt_data.get("torch")
        ml = mixlab_times(root, work, problems)
        batches = sorted(set(ml) | {int(k.split("@")[1]) for k in pt})
        for b in batches:
            for pol, (pt_pol, gemm_dtype, s) in POLICIES.items():
                mine = ml.get(b, {}).get(pol)
                plain, cl = pt.get(f"{pt_pol}@{b}"), pt.get(f"{pt_pol}_cl@{b}")
                # The strongest PyTorch: the whole step replayed from one CUDA graph, as
                # MixLab replays its own; the faster layout where both were timed.
                graphed, graphed_variant = None, None
                for name, label in ((f"{pt_pol}_graph", "graph"), (f"{pt_pol}_cl_graph", "c-last graph")):
                    t = pt.get(f"{name}@{b}")
                    if t is not None and (graphed is None or t < graphed):
                        graphed, graphed_variant = t, label
                if mine is None and plain is None and cl is None and graphed is None:
                    continue
                best, variant = None, None
                for t, name in ((plain, "NCHW" if work == "w2" else "eager"), (cl, "c-last")):
                    if t is not None and (best is None or t < best):
                        best, variant = t, name
                fp32 = ml.get(b, {}).get("fp32")
                r = {"workload": work, "batch": b, "policy": pol, "mixlab_ms": mine,
                     "pytorch_policy": pt_pol, "pytorch_ms": plain,
                     "pytorch_channels_last_ms": cl, "pytorch_best_ms": best,
                     "pytorch_best_variant": variant,
                     "mixlab_over_pytorch": mine / best if mine and best else None,
                     "pytorch_graphed_ms": graphed, "pytorch_graphed_variant": graphed_variant,
                     "mixlab_over_pytorch_graphed": mine / graphed if mine and graphed else None,
                     "mixed_over_fp32": mine / fp32 if mine and fp32 else None,
                     "gemm_dtype": gemm_dtype, "bytes_per_value": s}
                if counts:
                    samples = b * TOKENS_PER_SAMPLE.get(work, 1)
                    r["flops"] = step_flops(counts, samples)
                    r["bytes"] = step_bytes(counts, samples, s)
                    t_flop = (r["flops"] / (tflops[gemm_dtype] * 1e12) * 1e3
                              if gemm_dtype in tflops else None)
                    t_byte = r["bytes"] / (copy_gbs * 1e9) * 1e3 if copy_gbs else None
                    r["compute_floor_ms"], r["memory_floor_ms"] = t_flop, t_byte
                    if t_flop is not None and t_byte is not None:
                        r["floor_ms"] = max(t_flop, t_byte)
                        r["bound"] = "compute" if t_flop >= t_byte else "memory"
                    r["mixlab_pct_of_roofline"] = (100 * r["floor_ms"] / mine
                                                   if r.get("floor_ms") and mine else None)
                    r["pytorch_pct_of_roofline"] = (100 * r["floor_ms"] / best
                                                    if r.get("floor_ms") and best else None)
                rows.append(r)

    date = next((l[5:] for l in env.splitlines() if l.startswith("date ")), "?")
    lines = [f"MixLab vs PyTorch {torch_version or '?'} (eager and graphed) on {gpu or '?'}, {date}; "
             "ms/step, median after warm-up, one call"]
    if tflops or copy_gbs:
        lines.append("ceilings: " + ", ".join(f"{k} GEMM {v:.0f} TFLOP/s" for k, v in tflops.items())
                     + f"; copy {fmt(copy_gbs, '.0f')} GB/s (read+write)")
    head = (f"{'work':<4} {'batch':>5} {'policy':<10} {'MixLab':>8} {'PyTorch':>8} {'PT var':<6} "
            f"{'ML/PT':>6} {'PT graph':>8} {'ML/PTg':>6} {'mix/fp32':>8} {'floor':>7} {'bound':<7} "
            f"{'%roof':>6}")
    lines += [head, "-" * len(head)]
    md = ["| workload | batch | policy | MixLab ms | PyTorch ms (best eager) | MixLab/PyTorch "
          "| PyTorch ms (graphed) | MixLab/graphed | mixed/fp32 | floor ms | bound "
          "| % of roofline |", "|" + "---|" * 12]
    for r in rows:
        pct = fmt(r.get("mixlab_pct_of_roofline"), ".1f")
        lines.append(
            f"{r['workload']:<4} {r['batch']:>5} {r['policy']:<10} {fmt(r['mixlab_ms']):>8} "
            f"{fmt(r['pytorch_best_ms']):>8} {r['pytorch_best_variant'] or '-':<6} "
            f"{fmt(r['mixlab_over_pytorch'], '.2f'):>6} {fmt(r['pytorch_graphed_ms']):>8} "
            f"{fmt(r['mixlab_over_pytorch_graphed'], '.2f'):>6} {fmt(r['mixed_over_fp32'], '.2f'):>8} "
            f"{fmt(r.get('floor_ms')):>7} {r.get('bound') or '-':<7} {pct:>6}")
        pt_text = fmt(r["pytorch_best_ms"])
        if r["pytorch_best_variant"] == "c-last":
            pt_text += " (channels_last)"
        md.append(f"| {r['workload'].upper()} | {r['batch']} | {r['policy']} | {fmt(r['mixlab_ms'])} "
                  f"| {pt_text} | {fmt(r['mixlab_over_pytorch'], '.2f')} "
                  f"| {fmt(r['pytorch_graphed_ms'])}"
                  f"{' (channels_last)' if r['pytorch_graphed_variant'] == 'c-last graph' else ''} "
                  f"| {fmt(r['mixlab_over_pytorch_graphed'], '.2f')} "
                  f"| {fmt(r['mixed_over_fp32'], '.2f')} | {fmt(r.get('floor_ms'))} "
                  f"| {r.get('bound') or '-'} | {pct} |")
    legend = ("ML/PT: MixLab time over PyTorch's best eager time (below 1: MixLab faster); "
              "PT graph, ML/PTg: PyTorch's whole step captured in one CUDA graph (amp_fp16 at a "
              "static loss scale) and MixLab's time over it. "
              "mix/fp32: MixLab's time over its own fp32. floor: max((3 x forward FLOPs - first layer's) x batch "
              "/ GEMM ceiling of the policy's dtype, counted bytes / copy bandwidth), bytes as "
              "bench/README.md counts them. %roof: floor / MixLab time.")
    lines.append(legend)
    for p in failures + problems:
        lines.append(f"missing or failed: {p}")
    text = "\n".join(lines)
    print(text)
    (root / "bench_table.txt").write_text(text + "\n")
    (root / "bench_table.md").write_text("\n".join(md) + "\n")
    (root / "bench_table.json").write_text(json.dumps(
        {"date": date, "gpu": gpu, "torch": torch_version, "environment": env,
         "ceilings": ceil, "models": models, "rows": rows, "failures": failures,
         "problems": problems}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
