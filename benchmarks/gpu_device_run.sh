#!/bin/bash
# One call on the lent GPU machine, from the repository root, after Warp's wheel was installed into
# /tmp/site (the three chunk calls of docs/device.md). PART picks what runs:
#   tests    pytest -m gpu on every test file with GPU tests, then the CUDA capture oracles
#   verdicts gpu_issue36.py l2 assert oob ci daemon
#   verify   gpu_issue36.py stream, and the stream filler's GPU test (a short call)
#   stream   gpu_issue36.py stream daemon turn2 TREE (TREE: the turn-2 harness's tree)
#   profile  gpu_issue36.py stream turn2 TREE: where the time goes, then the wall times against turn 2
#   repeat   bench_gpu.py's repeatability (5 runs of saxpy_large, copy_f32, copy_vec4) with the default
#            protocol, then with the windows' early stop off (bench_windows_agree = 15)
# Results go to $OUT; a short table is printed last by each script.
set -u
PART=$1
# the package tree: warp_harness with its subpackages where pyproject's package-dir puts them
for d in rules server daemon docs; do [ -e warp_harness/$d ] || ln -s ../$d warp_harness/$d; done
if [ -d .devwhl ] && [ ! -e /tmp/site/watchdog ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .devwhl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
case $PART in
  tests)
    files=$(grep -rl "mark.gpu" tests --include='test_*.py' | sort)
    timeout 420 python3 -m pytest -o addopts="" -p no:cacheprovider -ra -q -m gpu $files 2>&1 | tail -40
    timeout 150 python3 benchmarks/gpu_capture_oracles.py "$OUT/oracles" 2>&1 | tail -25
    ;;
  verdicts)
    TAG=verdicts timeout 560 python3 benchmarks/gpu_issue36.py "$OUT" l2 assert oob ci daemon 2>&1 | tail -150
    ;;
  verify)
    TAG=verify timeout 300 python3 benchmarks/gpu_issue36.py "$OUT" stream 2>&1 | tail -60
    timeout 120 python3 -m pytest -o addopts="" -p no:cacheprovider -q -m gpu tests/daemon/test_stream_filler.py 2>&1 | tail -5
    ;;
  stream|profile)
    t2=$2
    [ -e $t2/warp_harness ] || ln -s core $t2/warp_harness
    for d in rules server daemon; do [ -e $t2/core/$d ] || ln -s ../$d $t2/core/$d; done
    parts="stream daemon"; [ "$PART" = profile ] && parts=stream
    TAG=$PART timeout 560 python3 benchmarks/gpu_issue36.py "$OUT" $parts turn2 "$PWD/$t2" 2>&1 | tail -150
    ;;
  repeat)
    skip="--skip calibrate --skip fidelity --skip allocations --skip cli"
    timeout 280 python3 benchmarks/bench_gpu.py --device cuda:0 --no-gemm $skip --out "$OUT/repeat" 2>&1 | tail -8
    timeout 280 python3 benchmarks/bench_gpu.py --device cuda:0 --no-gemm $skip --bench-windows-agree 15 \
      --out "$OUT/repeat15" 2>&1 | tail -8
    ;;
esac
