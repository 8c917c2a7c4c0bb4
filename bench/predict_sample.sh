#!/bin/sh
# predict_sample.sh: extra training kernels for bench_predict, as nn-Meter
# samples each kernel kind over many shapes: `opbench profile --sizes` grids
# around the training models' shapes (resnet-18, mobilenet-v2,
# squeezenet-1.1 at input size 56), with channel counts and sizes chosen off
# the held-out models' (resnet-50, inception-v3, bert-base): bench_predict
# drops any sampled point whose workload a held-out model has anyway.
# Each shape: the base config and 2 random ones, at 1 and 2 threads.
#
#   bench/predict_sample.sh OPBENCH DB PART [LIMITS]
# LIMITS: what the mm part does about the host's limits (default auto:
# measured once into the db; none: the db's own are kept).
# PART: conv1 (1x1), conv3 (3x3 and strided), convx (1x7, 7x1, 5x5, 3x3
# unpadded), mm (dense, batch_matmul, softmax), ew (elementwise mul, add);
# each well under 5 minutes
# once its kernels are in the cache (run it once under `cpu` to build them,
# into a scratch db, then under `quiet` into the real one).
set -eu
OB=$1
DB=$2
PART=$3
LIMITS=${4:-auto}
M="--threads 1,2 --knobs random:2 --repeat 5 --max-cv 0 --db $DB"
conv() { # shape epilogue pad sizes
  "$OB" profile conv2d --shape "$1" --epilogue "$2" --pad "$3" --sizes "$4" $M --limits none >/dev/null
}
case $PART in
conv1)
  for hw in 2 4; do
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=1,S=1" bias,relu 0 C=24/56/120/240/480/960/1920,K=40/96/200/400/800/1600
  done
  for hw in 6 9; do
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=1,S=1" bias,relu 0 C=24/56/120/240/480/960,K=40/96/200/400/800
  done
  conv "N=1,C=64,H=13,W=13,K=64,R=1,S=1" bias,relu 0 C=24/56/120/240/480,K=40/96/200/400
  ;;
conv3)
  for hw in 2 4 6; do
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=3,S=3" bias,relu 1 C=24/56/120/240/480,K=24/56/120/240/480
  done
  for hw in 9 13; do
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=3,S=3" bias,relu 1 C=24/56/120/240,K=24/56/120/240
  done
  for hw in 4 8 14; do
    "$OB" profile conv2d --shape "N=1,C=64,H=$hw,W=$hw,K=64,R=3,S=3" --stride 2 --pad 1 --epilogue bias,relu \
      --sizes C=56/120/240,K=56/120/240 $M --limits none >/dev/null
  done
  ;;
convx)
  for hw in 4 9; do
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=1,S=7" bias,relu 0,3 C=96/160/224,K=96/160/224
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=7,S=1" bias,relu 3,0 C=96/160/224,K=96/160/224
  done
  for hw in 5 9 13; do
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=5,S=5" bias,relu 2 C=24/56/120,K=40/96/200
    conv "N=1,C=64,H=$hw,W=$hw,K=64,R=3,S=3" bias,relu 0 C=24/56/120,K=40/96/200
  done
  ;;
mm)
  # the host's peak and bandwidths, measured once into the db (the features' host limits)
  "$OB" profile dense --shape M=1,N=1000,K=512 --epilogue bias --sizes M=1/4/16/48,N=192/640/1536/2560,K=192/640/1536/2560 $M --limits "$LIMITS" >/dev/null
  "$OB" profile batch_matmul --shape B=4,M=16,N=16,K=16 --sizes B=4/16,M=16/48,N=16/48/96,K=16/48/96 $M --limits none >/dev/null
  "$OB" profile softmax --shape M=64,N=16 --sizes M=64/192/768,N=16/48/128 $M --limits none >/dev/null
  ;;
ew)
  for op in mul add; do
    "$OB" profile $op --shape N=1,C=1,H=1,W=1000 --sizes W=1000/5000/30000/150000/600000 $M --limits none >/dev/null
  done
  ;;
*)
  echo "predict_sample.sh: unknown part '$PART' (conv1, conv3, convx, mm, ew)" >&2
  exit 2
  ;;
esac
