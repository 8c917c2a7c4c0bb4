#!/usr/bin/env bash
# graph_cli_test.sh: the model commands of `opbench` end to end. Usage:
# graph_cli_test.sh OPBENCH. Runs each case, prints `ok - name` or
# `not ok - name`, and at the end `N passed, M failed`; exits 1 if any
# failed. remoteonnx is tested against python3's http.server on loopback
# (started here, stopped on exit); small input sizes keep it to seconds.
set -u
. "$(dirname "$0")/sh_util.sh"

OB=${1:?usage: graph_cli_test.sh path/to/opbench}
tmp=$(mktemp -d)
srv_pid=
cleanup() {
  if [ -n "$srv_pid" ]; then kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPBENCH_CACHE=$tmp/cache

passed=0
failed=0

# ---- the zoo ---------------------------------------------------------------------
good "models lists resnet-18 with its published figures" '^local +resnet-18 +1\.814 +1\.814 +\+0\.0% +11\.690' models
grep -Eq '^transformers +gpt2 ' "$tmp/out" && grep -Eq '^local +yolov5s ' "$tmp/out" && ok "models lists gpt2 and yolov5s" || not_ok "models lists gpt2 and yolov5s"
good "models --modelname resnet-18: tasks" 'conv2d_nchw/f32/N1C64H56W56/K64R3S3' models --modelname resnet-18
good "models: passes line" '20 batch norms folded' models --modelname resnet-18
good "models --key-ops 50" '^key-ops +[0-9]+ of 18 tasks' models --modelname resnet-18 --key-ops 50
good "models --print-graph shows fused convs" 'Conv\(.*activation=relu' models --modelname resnet-18 --input-size 32 --print-graph
good "models --no-passes keeps batch norms" 'passes +none' models --modelname resnet-18 --input-size 32 --no-passes
good "models --batchsize 2" 'input +input \[2,3,224,224\]' models --modelname resnet-18 --batchsize 2
good "models simple source" 'model +simple' models --modelsource simple
good "models transformers gpt2 --seqlen" 'input +input_ids \[1,16\] int64' models --modelsource transformers --modelname gpt2 --seqlen 16
good "models lstm --hidden" 'dense/f32/M1N64K16' models --modelname lstm --hidden 16 --seqlen 4
run models --modelname resnet-18 --json
if [ "$rc" -eq 0 ] && python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['params']==11689512 and len(d['tasks'])==d['tasks_total']==18 else 1)" <"$tmp/out"; then
  ok "models --json"
else
  not_ok "models --json"
fi

# ---- bad input ---------------------------------------------------------------------
bad "unknown model" "unknown model 'resnet-19'.*resnet-18" models --modelname resnet-19
bad "unknown source" "unknown model source 'hub'" models --modelsource hub --modelname x
bad "batch size 0" '--batchsize: a batch size of 0' models --modelname resnet-18 --batchsize 0
bad "onnx without --modelpath" "needs --modelpath" models --modelsource onnx
bad "missing onnx file" "cannot open ONNX file '$tmp/none.onnx'" models --modelsource onnx --modelpath "$tmp/none.onnx"
bad "export needs --out" "needs --out" export-onnx --modelname resnet-18
bad "yolov5s input size" "not a multiple of 32" models --modelname yolov5s --input-size 100
bad "unknown flag" "unknown flag '--bogus'" models --bogus

# ---- export, import, reference ------------------------------------------------------
good "export-onnx resnet-18" "wrote $tmp/r18.onnx: resnet-18" export-onnx --modelname resnet-18 --input-size 32 --out "$tmp/r18.onnx"
good "import the export" 'tasks +[0-9]+ distinct' models --modelsource onnx --modelpath "$tmp/r18.onnx"
run models --modelsource onnx --modelpath "$tmp/r18.onnx" --json
p1=$(python3 -c "import json,sys; print(json.load(sys.stdin)['params'])" <"$tmp/out" 2>/dev/null)
[ "$p1" = "11689512" ] && ok "imported export keeps the parameter count" || not_ok "imported export keeps the parameter count"
good "run-reference zoo" '^output fc \[1,1000\] float32 sum' run-reference --modelname resnet-18 --input-size 32 --save-output "$tmp/a.npy" --save-io "$tmp/io"
good "run-reference imported, same input" '^output fc \[1,1000\]' run-reference --modelsource onnx --modelpath "$tmp/r18.onnx" --input "$tmp/io/input0.npy" --save-output "$tmp/b.npy"
if python3 - "$tmp/a.npy" "$tmp/b.npy" <<'EOF'
import struct, sys
def load(p):
    b = open(p, 'rb').read()
    hl = struct.unpack('<H', b[8:10])[0]
    hdr = b[10:10 + hl].decode()
    assert "'<f4'" in hdr and '(1, 1000)' in hdr, hdr
    return struct.unpack('<1000f', b[10 + hl:])
a, b = load(sys.argv[1]), load(sys.argv[2])
m = max(abs(x) for x in a)
sys.exit(0 if max(abs(x - y) for x, y in zip(a, b)) <= 1e-5 * m else 1)
EOF
then ok "export -> import -> reference gives the same output (.npy)"; else not_ok "export -> import -> reference gives the same output (.npy)"; fi
[ -s "$tmp/io/output0.npy" ] && grep -q '^input 0 input$' "$tmp/io/io.txt" && ok "--save-io files" || not_ok "--save-io files"
bad "--input of the wrong shape" "does not have the shape \[1,3,64,64\]" run-reference --modelname resnet-18 --input-size 64 --input "$tmp/io/input0.npy"
head -c 3000 "$tmp/r18.onnx" >"$tmp/trunc.onnx"
bad "truncated onnx" "trunc.onnx" models --modelsource onnx --modelpath "$tmp/trunc.onnx"
printf 'this is not a protobuf\n' >"$tmp/junk.onnx"
bad "malformed onnx" "junk.onnx: not a valid ONNX model" models --modelsource onnx --modelpath "$tmp/junk.onnx"

# ---- config space of a model -----------------------------------------------------------
good "space --modelname" 'conv2d_NCHWc.x86' space --modelname resnet-18 --input-size 32
run space --modelname resnet-18 --key-ops 80 --out "$tmp/space.json"
if [ "$rc" -eq 0 ] && python3 -c "
import json,sys
d=json.load(open('$tmp/space.json'))
t=d['tasks']
ok=len(t)>=1 and all(x['space_size']>=1 and x['knobs'] and 'default' in x for x in t)
ok=ok and all(len(k['values'])==k['entities'] for x in t for k in x['knobs'])
sys.exit(0 if ok else 1)"; then ok "space --out FILE.json"; else not_ok "space --out FILE.json"; fi
bad "space with op and model" "not both" space conv2d --modelname resnet-18

# ---- remoteonnx over loopback -----------------------------------------------------------
mkdir -p "$tmp/www"
cp "$tmp/r18.onnx" "$tmp/www/model.onnx"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/www" >/dev/null 2>&1 &
srv_pid=$!
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break
  sleep 0.1
done
url="http://127.0.0.1:$port/model.onnx"
sum=$(sha256sum "$tmp/www/model.onnx" | cut -d' ' -f1)
good "remoteonnx download and import" 'model +resnet-18 \(remoteonnx\)' models --modelsource remoteonnx --modelname "$url" --sha256 "$sum"
ls "$OPBENCH_CACHE"/models/*.onnx >/dev/null 2>&1 && ok "download lands in the cache folder" || not_ok "download lands in the cache folder"
bad "remoteonnx wrong sha256" "SHA-256 .* differs" models --modelsource remoteonnx --modelname "http://127.0.0.1:$port/model.onnx?x" --sha256 "$(printf '0%.0s' $(seq 64))"
bad "remoteonnx 404" "HTTP 404" models --modelsource remoteonnx --modelname "http://127.0.0.1:$port/missing.onnx"
bad "remoteonnx size limit" "exceeds the limit of 1000 bytes" models --modelsource remoteonnx --modelname "http://127.0.0.1:$port/model.onnx?y" --max-download 1000
bad "remoteonnx bad sha256 text" "is not 64 hexadecimal digits" models --modelsource remoteonnx --modelname "$url" --sha256 abc
kill "$srv_pid" 2>/dev/null
wait "$srv_pid" 2>/dev/null
srv_pid=
bad "remoteonnx without a network" "cannot reach .* \(no network\?\)" models --modelsource remoteonnx --modelname "http://127.0.0.1:$port/other.onnx"
bad "remoteonnx not http" "is not http:// or https://" models --modelsource remoteonnx --modelname "ftp://example/x.onnx"
ls "$OPBENCH_CACHE"/models/*.part.* >/dev/null 2>&1 && not_ok "no partial downloads left" || ok "no partial downloads left"

finish
