#!/usr/bin/env python3
"""bench/wino_compile.py: C size and compile time of conv2d_winograd.x86's F(6x6) kernels, two builds of opbench.

For each ResNet-18 stride-1 3x3 layer, its default config at tile_m=6: `opbench op ... --repeat 1` into a fresh
kernel cache through a compiler wrapper that times the one compile (the target's own flags, no test -O1), the
builds alternating, 3 rounds. Prints a table and the geomean of the compile time new/old last.

usage: python3 bench/wino_compile.py OLD_OPBENCH NEW_OPBENCH   (e.g. a worktree's build of an older commit)
"""
import json, os, re, subprocess, shutil, statistics, sys, tempfile
if len(sys.argv) != 3:
    sys.exit(__doc__)
bins = {"old": sys.argv[1], "new": sys.argv[2]}
tmp = tempfile.mkdtemp(prefix="wino_compile.")
wrapper = os.path.join(tmp, "cc")
with open(wrapper, "w") as f:
    f.write('#!/bin/bash\nt0=$(date +%s.%N); /usr/bin/env cc "$@"; rc=$?; t1=$(date +%s.%N)\n'
            'src=""; for a in "$@"; do case $a in *.c) src=$a;; esac; done\n'
            '[ -n "$src" ] && echo "$(echo "$t1 - $t0" | bc) $(stat -c %s "$src")" >> "$CCLOG"\nexit $rc\n')
os.chmod(wrapper, 0o755)
shapes = ["N=1,C=64,H=56,W=56,K=64,R=3,S=3", "N=1,C=128,H=28,W=28,K=128,R=3,S=3",
          "N=1,C=256,H=14,W=14,K=256,R=3,S=3", "N=1,C=512,H=7,W=7,K=512,R=3,S=3"]
res = {}
for r in range(3):
    for sh in shapes:
        for lab in (("old", "new") if r % 2 == 0 else ("new", "old")):
            b = bins[lab]
            sp = subprocess.run([b, "space", "conv2d", "--shape", sh, "--pad", "1", "--template", "conv2d_winograd.x86"], capture_output=True, text=True).stdout
            ent = json.loads(re.search(r"default json (.*)", sp).group(1))["entity"]
            cfg = json.dumps({"entity": [[k, t, 6 if k == "tile_m" else v] for k, t, v in ent]})
            cache = os.path.join(tmp, "cache-" + lab); shutil.rmtree(cache, ignore_errors=True)
            log = os.path.join(tmp, lab + ".log")
            if os.path.exists(log): os.remove(log)
            env = dict(os.environ, OPBENCH_CACHE=cache, OPBENCH_CC=wrapper, CCLOG=log)
            env.pop("OPBENCH_CFLAGS_APPEND", None)
            p = subprocess.run([b, "op", "conv2d", "--shape", sh, "--pad", "1", "--template", "conv2d_winograd.x86",
                                "--config", cfg, "--repeat", "1", "--json"], capture_output=True, text=True, env=env)
            d = json.loads(p.stdout); assert d["error_no"] == 0, p.stdout[-300:]
            sec, size = open(log).read().split()[:2]
            res.setdefault((sh, lab), []).append((float(sec), int(size)))
print(f"{'shape':36s} {'old C bytes':>11s} {'new C bytes':>11s} {'old s':>7s} {'new s':>7s} {'new/old s':>9s}  (median of 3 compiles each)")
rat = []
for sh in shapes:
    o = res[(sh, "old")]; n = res[(sh, "new")]
    os_, ns = statistics.median(x[0] for x in o), statistics.median(x[0] for x in n)
    rat.append(ns / os_)
    print(f"{sh:36s} {o[0][1]:11d} {n[0][1]:11d} {os_:7.2f} {ns:7.2f} {ns/os_:9.3f}")
import math
print("geomean compile time new/old %.3f" % math.exp(sum(map(math.log, rat)) / len(rat)))
shutil.rmtree(tmp, ignore_errors=True)
