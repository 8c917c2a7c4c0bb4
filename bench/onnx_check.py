#!/usr/bin/env python3
"""bench/onnx_check.py: ONNX Runtime as the numerical oracle of opbench's graphs.

For each zoo model at a small input size: `opbench export-onnx` writes it,
`opbench run-reference --save-io` runs opbench's naive reference (as built,
and again after the passes) on seeded inputs, and ONNX Runtime (CPU execution
provider, all graph optimizations on, 1 thread) runs the exported file on the
same inputs. Prints per model the maximum relative difference
max|ort - opbench| / max|opbench| of every output, and last the largest one
with the bar (1e-4; exit status 1 above it).

--torch also imports real torch.onnx.export files: torchvision's resnet18,
mobilenet_v2, squeezenet1_1 and inception_v3 with random weights (torch from Debian's python3-torch/python3-torchvision,
seen through the venv's system site packages), checked against PyTorch's own
output on the same input.

Python drives the peers only; opbench itself is C. The script makes its own
virtual environment under build/onnx-venv (pip install numpy onnxruntime)
and re-runs itself there.

usage: python3 bench/onnx_check.py [--opbench build/opbench] [--models a,b] [--torch]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "build", "onnx-venv")
BAR = 1e-4

# (source, name, extra flags): small sizes so the naive reference stays quick
MODELS = [
    ("simple", "simple", []),
    ("local", "resnet-18", ["--input-size", "64"]),
    ("local", "resnet-50", ["--input-size", "64"]),
    ("local", "vgg-16", ["--input-size", "32"]),
    ("local", "mobilenet-v2", ["--input-size", "64"]),
    ("local", "squeezenet-1.1", ["--input-size", "64"]),
    ("local", "inception-v3", ["--input-size", "75"]),
    ("local", "yolov5s", ["--input-size", "128"]),
    ("local", "lstm", ["--hidden", "64", "--seqlen", "8"]),
    ("local", "bert-base", ["--seqlen", "16"]),
    ("transformers", "bert-base-uncased", ["--seqlen", "16"]),
    ("transformers", "gpt2", ["--seqlen", "16"]),
]


def in_venv():
    return os.path.realpath(sys.prefix) == os.path.realpath(VENV)


def ensure_venv():
    py = os.path.join(VENV, "bin", "python3")
    if not os.path.exists(py):
        import venv
        print(f"onnx_check: creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True, system_site_packages=True)
    ok = subprocess.run([py, "-c", "import numpy, onnxruntime"], capture_output=True).returncode == 0
    if not ok:
        print("onnx_check: pip install numpy onnxruntime", flush=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", "numpy", "onnxruntime"], check=True)
    os.execv(py, [py] + sys.argv)


def opbench(exe, *args):
    r = subprocess.run([exe] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"opbench {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def load_io(folder):
    import numpy as np
    ins, outs = {}, []
    with open(os.path.join(folder, "io.txt")) as f:
        for line in f:
            kind, idx, name = line.split(maxsplit=2)
            arr = np.load(os.path.join(folder, f"{kind}{idx}.npy"))
            if kind == "input":
                ins[name.strip()] = arr
            else:
                outs.append((name.strip(), arr))
    return ins, outs


def rel_diff(a, b):
    import numpy as np
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m = np.max(np.abs(b)) if b.size else 0.0
    d = np.max(np.abs(a - b)) if b.size else 0.0
    return d / m if m > 0 else d


def ort_session(path, threads=1):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def check_model(exe, tmp, source, name, flags):
    path = os.path.join(tmp, f"{name}.onnx")
    common = ["--modelsource", source, "--modelname", name] + flags
    opbench(exe, "export-onnx", *common, "--out", path)
    raw, opt = os.path.join(tmp, f"{name}.raw"), os.path.join(tmp, f"{name}.opt")
    opbench(exe, "run-reference", *common, "--no-passes", "--save-io", raw)
    opbench(exe, "run-reference", *common, "--save-io", opt)
    ins, ref = load_io(raw)
    _, ref_opt = load_io(opt)
    sess = ort_session(path)
    t0 = time.perf_counter()
    got = sess.run([n for n, _ in ref], ins)
    ms = (time.perf_counter() - t0) * 1e3
    d_raw = max(rel_diff(g, r) for g, (_, r) in zip(got, ref))
    d_opt = max(rel_diff(g, r) for g, (_, r) in zip(got, ref_opt))
    shape = " ".join(f"{k}{list(v.shape)}" for k, v in ins.items())
    return shape, d_raw, d_opt, ms


TORCH_EXPORT = r"""
import sys, numpy as np, torch, torchvision
torch.manual_seed(0)
name, size = sys.argv[4], int(sys.argv[5])
kw = {"aux_logits": False, "init_weights": True} if name == "inception_v3" else {}
m = getattr(torchvision.models, name)(num_classes=1000, **kw).eval()
x = torch.randn(1, 3, size, size)
torch.onnx.export(m, x, sys.argv[1], opset_version=13, input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
with torch.no_grad():
    np.save(sys.argv[3], m(x).numpy())
np.save(sys.argv[2], x.numpy())
print(torch.__version__)
"""


TORCH_MODELS = [("resnet18", 64), ("mobilenet_v2", 64), ("squeezenet1_1", 64), ("inception_v3", 96)]


def check_torch(exe, tmp):
    """Real torch.onnx.export files: torchvision models with random weights,
    exported by the Python that has torch (the venv's, else Debian's)."""
    import numpy as np
    worst = None
    for name, size in TORCH_MODELS:
        path, xin, want = (os.path.join(tmp, f) for f in (f"torch_{name}.onnx", "x.npy", "want.npy"))
        version = None
        for py in (sys.executable, "/usr/bin/python3"):
            r = subprocess.run([py, "-c", TORCH_EXPORT, path, xin, want, name, str(size)], capture_output=True, text=True)
            if r.returncode == 0:
                version = r.stdout.strip().splitlines()[-1]
                break
        if version is None:
            print("torch check skipped: no Python with torch and torchvision (apt-get install python3-torch "
                  "python3-torchvision)")
            return None
        out = os.path.join(tmp, "torch_out.npy")
        try:
            info = opbench(exe, "models", "--modelsource", "onnx", "--modelpath", path)
            opbench(exe, "run-reference", "--modelsource", "onnx", "--modelpath", path, "--input", xin,
                    "--save-output", out)
        except RuntimeError as e:
            print(f"torch.onnx.export {name}: FAILED: {e}")
            worst = float("inf")
            continue
        d = rel_diff(np.load(out), np.load(want))
        d_ort = rel_diff(ort_session(path).run(None, {"input": np.load(xin)})[0], np.load(want))
        tasks = [l.split(None, 1)[1] for l in info.splitlines() if l.startswith("tasks")]
        print(f"torch.onnx.export {name:<14} torch {version}, opset 13, {size}x{size}: max rel diff vs PyTorch: "
              f"opbench {d:.2e}, ONNX Runtime {d_ort:.2e}; {tasks[0] if tasks else ''}", flush=True)
        worst = d if worst is None else max(worst, d)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opbench", default=os.path.join(ROOT, "build", "opbench"))
    ap.add_argument("--models", default="", help="comma list of zoo names (default: all)")
    ap.add_argument("--torch", action="store_true", help="also check a torch.onnx.export file")
    a = ap.parse_args()
    if not in_venv():
        ensure_venv()
    import onnxruntime as ort
    want = set(filter(None, a.models.split(",")))
    worst = 0.0
    print(f"ONNX Runtime {ort.__version__}, CPU execution provider, 1 thread, ORT_ENABLE_ALL")
    print(f"{'model':<18} {'inputs':<34} {'vs built':>10} {'vs passes':>10} {'ort ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for source, name, flags in MODELS:
            if want and name not in want:
                continue
            try:
                shape, d_raw, d_opt, ms = check_model(a.opbench, tmp, source, name, flags)
            except Exception as e:  # report and go on: one model must not hide the others
                print(f"{name:<18} FAILED: {e}")
                worst = float("inf")
                continue
            worst = max(worst, d_raw, d_opt)
            print(f"{name:<18} {shape:<34} {d_raw:>10.2e} {d_opt:>10.2e} {ms:>8.1f}", flush=True)
        if a.torch:
            d = check_torch(a.opbench, tmp)
            if d is not None:
                worst = max(worst, d)
    print(f"max relative difference ONNX Runtime vs opbench reference: {worst:.2e} (bar {BAR:.0e})")
    return 0 if worst <= BAR else 1


if __name__ == "__main__":
    sys.exit(main())
