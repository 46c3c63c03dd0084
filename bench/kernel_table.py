"""Groups two Nsight Compute kernel lists of one training step (kernel_profile.sh's CSVs:
MixLab's and PyTorch's) by what each kernel does, and prints a markdown table: per group
the kernels, their summed time and the difference, then each side's ten longest kernels.
Usage: kernel_table.py MIXLAB_CSV PYTORCH_CSV"""
import csv
import re
import sys

# First match wins: batch norm before convolution (cuDNN's BN kernels carry "cudnn"),
# the directions of a convolution before its forward.
GROUPS = [
    # mixed_fp8's first layer: the batch gathered straight into E4M3 (fp8_quantize_tiled
    # over a GatherSource) is the input, as the 16-bit gather is.
    ("input", r"gather"),
    ("fp8 quantize", r"fp8_quantize|fp8_update|fp8_transpose"),  # W's transposed fp8 copy too
    ("batch norm", r"bn_|batch_?norm|welford"),
    ("conv wgrad", r"wgrad|bwd_filter|backward_filter|convolve_filter"),
    ("conv dgrad", r"dgrad|bwd_data|backward_data"),
    ("layout copies", r"transpose|pad_channels|nchwtonhwc|nhwctonchw|flip_weights"),
    ("conv fprop", r"fprop|conv|winograd|implicit|xmma"),
    ("GEMM", r"gemm|cutlass|cublas|nvjet|magma|skinny|splitk"),
    ("reductions", r"reduce_kernel|row_sums|column_partials|column_finish|bias_grad"),
    ("optimizer", r"optimizer|sgd|multi_tensor|found_inf|scaler|foreach|_amp_"),
    ("loss", r"cross_entropy|softmax|nll|log_softmax"),
    ("pooling", r"pool"),
    ("elementwise", r"relu|add|activation|elementwise|vectorized|unrolled|fill|cast|copy"),
]


def group_of(name):
    low = name.lower()
    for g, pattern in GROUPS:
        if re.search(pattern, low):
            return g
    return "other"


def read(path):
    """[(kernel name, microseconds)] in launch order."""
    rows, header = [], None
    with open(path, newline="") as f:
        for rec in csv.reader(line for line in f if line.startswith('"')):
            if header is None:
                if "Kernel Name" in rec:
                    header = rec
                continue
            row = dict(zip(header, rec))
            try:
                ns = float(row["gpu__time_duration.sum"].replace(",", ""))
            except (KeyError, ValueError):
                continue  # the units row
            rows.append((row["Kernel Name"], ns / 1000.0))
    return rows


def main():
    sides = {"MixLab": read(sys.argv[1]), "PyTorch": read(sys.argv[2])}
    totals = {s: {} for s in sides}
    for s, rows in sides.items():
        for name, us in rows:
            n, t = totals[s].get(group_of(name), (0, 0.0))
            totals[s][group_of(name)] = (n + 1, t + us)
    names = [g for g, _ in GROUPS] + ["other"]
    print("| group | MixLab kernels | MixLab us | PyTorch kernels | PyTorch us | MixLab - PyTorch us |")
    print("|---|---|---|---|---|---|")
    for g in names:
        (mn, mt), (pn, pt) = totals["MixLab"].get(g, (0, 0.0)), totals["PyTorch"].get(g, (0, 0.0))
        if mn or pn:
            print(f"| {g} | {mn} | {mt:.1f} | {pn} | {pt:.1f} | {mt - pt:+.1f} |")
    sm = sum(us for _, us in sides["MixLab"])
    sp = sum(us for _, us in sides["PyTorch"])
    print(f"| **all** | {len(sides['MixLab'])} | {sm:.1f} | {len(sides['PyTorch'])} | {sp:.1f} "
          f"| {sm - sp:+.1f} |")
    for s, rows in sides.items():
        print(f"\n{s}: the ten longest kernels (us, group, name)")
        for name, us in sorted(rows, key=lambda r: -r[1])[:10]:
            print(f"- {us:8.1f}  {group_of(name):13s} {name[:110]}")


if __name__ == "__main__":
    main()
