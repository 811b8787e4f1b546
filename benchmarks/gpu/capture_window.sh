#!/usr/bin/env bash
# Issue 27 on the GPU machine: capture windows (`run --capture-steps A:B`, `--capture-after S --capture-for S`), from
# our wheel in a fresh venv, on nanoGPT (karpathy/nanoGPT, unmodified, .gpu/nanogpt; shakespeare_char config on
# random tokens, --compile=False).
#   A: correctness. Each backend's window against the same backend's whole-job capture reported with `--steps A:B`:
#      kernel launches per name must be equal (the training loop is deterministic); per-op attribution present in the
#      window (--annotate torch); time windows (nsys --delay/--duration, the tracer's timers); windows that never
#      open (past the job's last step; before the job's first second); nsys' own options.
#   B: cost. ROUNDS (default 3) interleaved rounds, order rotated, of nanoGPT for ITERS (default 1000) steps:
#      unprofiled, cupti whole job, cupti window 100:120, nsys window 100:120 (nsys whole job once: it is the slow
#      one); the job's wall time from each run's manifest (the wrapper's own exit excluded), and the in-process
#      per-launch cost of the tracer inside a window against CUPTI's floor for the same kinds
#      (benchmarks/gpu/window_launch_cost.py).
#   Later parts (K-R): the cost of an nsys window, each described where it begins below.
# Here first: bash ../shared/device/prep.sh pyahocorasick; rm -f .whl/nvprof_wrap-*.whl;
#   NVPROF_WRAP_NO_NATIVE=1 python3 -m pip wheel -q --no-deps --no-build-isolation -w .whl .   (pure: the GPU
#   machine's Python is 3.12)
# There, carrying .whl .debs .gpu:   source .debs/gpu-env.sh; bash benchmarks/gpu/capture_window.sh A   (then B)
set -u
PART=${1:-A}; START=$(date +%s)
REPO=$PWD
unset PYTHONPATH
S=/tmp/win27; R=$S/runs; LOG=${OUT:-/tmp}/window-$PART.log
mkdir -p $R
export NO_COLOR=1 COLUMNS=160 NVPROF_WRAP_NSYS=$NSYS NVPROF_WRAP_HISTORY=$S/history.sqlite PYTHONUNBUFFERED=1
source $REPO/benchmarks/gpu/venv.sh
(cd / && $V/python -c "import nvprof_wrap; print('nvprof_wrap from', nvprof_wrap.__file__)") >> $LOG 2>&1  # not the checkout
nanogpt_copy
cp $REPO/benchmarks/gpu/window_compare.py $S/
cd $S/nanogpt
nano() { echo "config/train_shakespeare_char.py --compile=False --max_iters=$1 --eval_interval=100000 --eval_iters=2 --log_interval=100 --always_save_checkpoint=False"; }
wall() { $V/python -c "import json,sys; m=json.load(open(sys.argv[1])); print('job', sys.argv[2], m['wall_s'], 'exit', m['exit_code'])" $1/manifest.json $2 >> $LOG 2>&1; }

compare() {  # compare BACKEND...: whole job vs window 20:30, launches per kernel name and ops
  N=$(nano 60)
  for b in "$@"; do
    step "$b: whole job vs window 20:30 (--annotate torch)"
    t whole_$b $W run --backend $b --annotate torch --no-report -o $R/whole_$b -- $V/python train.py $N
    t win_$b $W run --backend $b --annotate torch --capture-steps 20:30 -o $R/win_$b -- $V/python train.py $N
    wall $R/whole_$b whole_$b; wall $R/win_$b win_$b
    ls -la $R/win_$b >> $LOG; cat $R/win_$b/windows.jsonl >> $LOG 2>&1
    $W report $R/whole_$b --steps 20:30 --format json -o $S/whole_$b.json >> $LOG 2>&1
    $W report $R/win_$b --format json -o $S/win_$b.json >> $LOG 2>&1
    $V/python $S/window_compare.py $S/whole_$b.json $S/win_$b.json >> $LOG 2>&1
    for f in $R/win_$b/cupti-*.sqlite; do [ -f "$f" ] && $V/python -c "import sqlite3,sys; print(dict(sqlite3.connect(sys.argv[1]).execute(\"select key, value from meta where key in ('api_records','kinds','capture_window','window_opened_ns','window_closed_ns')\")))" "$f" >> $LOG 2>&1; done
  done
}
times() {
  step "time windows"
  N=$(nano 400)
  t time_nsys $W run --backend nsys --capture-after 6.5 --capture-for 2 -o $R/time_nsys -- $V/python train.py $N
  t time_cupti $W run --backend cupti --capture-after 6.5 --capture-for 2 -o $R/time_cupti -- $V/python train.py $N
  cat $R/time_nsys/windows.jsonl $R/time_cupti/windows.jsonl >> $LOG 2>&1
}
if [ "$PART" = A ]; then
  step "nsys' own capture options"
  $NSYS profile --help 2>&1 | grep -A12 -E "capture-range-end|^ *-y, --delay|--duration=" | head -60 >> $LOG
  compare cupti nsys
  times
  step "windows that never open"
  N=$(nano 30)
  TAIL=6 t never_steps_cupti $W run --backend cupti --capture-steps 500:520 -o $R/never_steps_cupti -- $V/python train.py $N
  TAIL=6 t never_steps_nsys $W run --backend nsys --capture-steps 500:520 -o $R/never_steps_nsys -- $V/python train.py $N
  TAIL=6 t never_time_nsys $W run --backend nsys --capture-after 300 -o $R/never_time_nsys -- $V/python train.py $N
  ls -la $R/never_steps_nsys $R/never_time_nsys >> $LOG 2>&1
  step "window 0:5 (opens at torch's import)"
  TAIL=8 t zero_cupti $W run --backend cupti --capture-steps 0:5 -o $R/zero_cupti -- $V/python train.py $N
  TAIL=8 t zero_nsys $W run --backend nsys --capture-steps 0:5 -o $R/zero_nsys -- $V/python train.py $N
  cat $R/zero_nsys/windows.jsonl >> $LOG 2>&1
  $W report $R/win_nsys --format html -o ${OUT:-/tmp}/win_nsys.html >> $LOG 2>&1
  cp $S/win_cupti.json $S/win_nsys.json ${OUT:-/tmp}/ 2>/dev/null
fi

if [ "$PART" = B ]; then
  ITERS=${ITERS:-1000}; ROUNDS=${ROUNDS:-3}
  N=$(nano $ITERS)
  VARIANTS=(none cupti_win nsys_win cupti_whole)
  for round in $(seq 1 $ROUNDS); do
    for i in 0 1 2 3; do
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-530} ] || { step "budget: repeat $round stopped"; break 2; }
      v=${VARIANTS[$(( (i + round) % 4 ))]}
      name=${v}_$round
      step "repeat $round $v"
      case $v in
        none) s=$EPOCHREALTIME; $V/python train.py $N > $R/$name.txt 2>&1; rc=$?
              echo "job $name $(awk "BEGIN{print $EPOCHREALTIME - $s}") exit $rc" >> $LOG ;;
        cupti_win) TAIL=3 t $name $W run --backend cupti --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N; wall $R/$name $name ;;
        nsys_win) TAIL=3 t $name $W run --backend nsys --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N; wall $R/$name $name ;;
        cupti_whole) TAIL=3 t $name $W run --backend cupti --no-report -o $R/$name -- $V/python train.py $N; wall $R/$name $name ;;
      esac
    done
  done
  step "nsys whole job, once"
  N=$(nano $ITERS)
  TAIL=3 t nsys_whole $W run --backend nsys --no-report -o $R/nsys_whole -- $V/python train.py $N; wall $R/nsys_whole nsys_whole
  step "the windowed runs reported"
  TAIL=12 t rep_cupti_win $W report $R/cupti_win_1
  TAIL=12 t rep_nsys_win $W report $R/nsys_win_1
  du -sh $R/*_1 $R/nsys_whole >> $LOG 2>&1
  grep -h "^job " $LOG
fi
if [ "$PART" = C ]; then
  step "in-process: the tracer inside a window vs CUPTI's floor (same kinds), launch calls kept only"
  ( cd $REPO; PYTHONPATH=$REPO timeout 200 $V/python benchmarks/gpu/window_launch_cost.py --steps 800 --rounds 5 >> $LOG 2>&1 )
  step "a seconds window inside the training loop (cupti, nsys), and 0:5 under nsys (retried at step 1)"
  N=$(nano 700)
  TAIL=12 t time2_cupti $W run --backend cupti --capture-after 13 --capture-for 2 -o $R/time2_cupti -- $V/python train.py $N
  cat $R/time2_cupti/windows.jsonl >> $LOG 2>&1
  N=$(nano 30)
  TAIL=8 t zero2_nsys $W run --backend nsys --capture-steps 0:5 -o $R/zero2_nsys -- $V/python train.py $N
  cat $R/zero2_nsys/windows.jsonl >> $LOG 2>&1
  step "fresh processes: CUPTI attached but idle vs no profiler, launch-heavy job, 5 rounds"
  for round in 1 2 3; do
    for v in none idle; do
      if [ $v = none ]; then $V/python $REPO/workloads/launch_rate.py --kind launch --steps 800 >> $LOG 2>&1
      else $W run --backend cupti --no-report --capture-steps 100000:100001 -o $R/idle2_$round -- \
        $V/python $REPO/workloads/launch_rate.py --kind launch --steps 800 > /dev/null 2>&1; echo "idle $(grep -h '"loop_s"' $R/idle2_$round/stdout.log)" >> $LOG; fi
    done
  done
fi
if [ "$PART" = C ] || [ "$PART" = D ]; then
  step "nanoGPT's own iteration times (--log_interval=1), 3 rounds: unprofiled, cupti window 100:120, nsys window"
  N="$(nano 1000) --log_interval=1"
  for round in 1 2 3; do
    for i in 0 1 2; do
      v=$(echo none cupti nsys | cut -d' ' -f$(( (i + round) % 3 + 1 )))
      name=it_${v}_$round
      if [ $v = none ]; then $V/python train.py $N > $R/$name.txt 2>&1; out=$R/$name.txt
      else $W run --backend $v --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1
        out=$R/$name/stdout.log; wall $R/$name $name; fi
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 >> $LOG 2>&1
    done
  done
  grep -h "^iters " $LOG
fi
if [ "$PART" = E ]; then
  step "what costs outside the window: the hardware sampler? nanoGPT iteration times, one round"
  N="$(nano 1000) --log_interval=1"
  $V/python train.py $N > $R/e_none.txt 2>&1; $V/python $REPO/benchmarks/gpu/nano_iterations.py e_none $R/e_none.txt --window 100:120 >> $LOG 2>&1
  for v in "cupti --no-hardware" "cupti" "nsys --no-hardware"; do
    name=e_$(echo $v | tr -d ' -')
    $W run --backend $v --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1
    $V/python $REPO/benchmarks/gpu/nano_iterations.py "$name" $R/$name/stdout.log --window 100:120 >> $LOG 2>&1
  done
  $V/python train.py $N > $R/e_none2.txt 2>&1; $V/python $REPO/benchmarks/gpu/nano_iterations.py e_none2 $R/e_none2.txt --window 100:120 >> $LOG 2>&1
fi
if [ "$PART" = F ]; then
  # Owed from parts D and E (no GPU time was left for more there): they found nanoGPT's iterations 10-30% slower OUTSIDE a
  # window under both cupti (subscribed, idle) and nsys (capture range), with or without the hardware sampler.
  # Which part costs: our in-job hooks alone (no profiler), the idle subscription, or CUPTI at all (attach mode:
  # subscribed only while the window is open, detached by cuptiFinalize after)?
  step "what costs outside the window, 3 rounds of nanoGPT iteration times"
  N="$(nano 1000) --log_interval=1"
  INJECT=$($V/python -c "import nvprof_wrap, os; print(os.path.dirname(nvprof_wrap.__file__))")/tracer/inject
  VARIANTS=(none hooks cupti_idle cupti_attach nsys)
  for round in 1 2 3; do
    for i in 0 1 2 3 4; do
      v=${VARIANTS[$(( (i + round) % 5 ))]}; name=f_${v}_$round; out=$R/$name/stdout.log
      case $v in
        none) mkdir -p $R/$name; $V/python train.py $N > $out 2>&1 ;;
        hooks) mkdir -p $R/$name; env PYTHONPATH=$INJECT NVPROF_WRAP_ANNOTATE=steps NVPROF_WRAP_CAPTURE=steps:100:120 \
                 NVPROF_WRAP_CAPTURE_BY=self NVPROF_WRAP_RUN_DIR=$R/$name $V/python train.py $N > $out 2>&1 ;;
        cupti_idle) $W run --backend cupti --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > /dev/null 2>&1 ;;
        cupti_attach) NVPROF_WRAP_CUPTI_WINDOW=attach $W run --backend cupti --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > /dev/null 2>&1 ;;
        nsys) $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > /dev/null 2>&1 ;;
      esac
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 >> $LOG 2>&1
    done
  done
  TAIL=12 t rep_attach $W report $R/f_cupti_attach_1
  grep -h "^iters " $LOG
fi
if [ "$PART" = G ]; then
  # Part G: the tracer's cost inside a window (candidate walk vs stepwise, against CUPTI's floor); whether
  # per-callback launch records work when CUPTI is attached only once the window opens; nsys' options.
  step "nsys' options that may cost outside a capture range"
  $NSYS --version >> $LOG 2>&1
  $NSYS profile --help 2>&1 | grep -E -A4 "cuda-event-trace|cuda-graph-trace|cudabacktrace|^ *-t, --trace=|cuda-flush-interval|cuda-memory-usage|capture-range=" | head -90 >> $LOG
  step "in-process: the tracer inside a window vs CUPTI's floor; the candidate walk vs the stepwise one"
  ( cd $REPO; PYTHONPATH=$REPO timeout 300 $V/python benchmarks/gpu/window_launch_cost.py --steps 800 --rounds 5 >> $LOG 2>&1 )
  step "attach mode: every API call recorded (default) vs per-callback launch records (NVPROF_WRAP_CUPTI_RUNTIME=1)"
  N=$(nano 60)
  for v in kinds cbids; do
    if [ $v = cbids ]; then export NVPROF_WRAP_CUPTI_RUNTIME=1; fi
    TAIL=6 t g_$v $W run --backend cupti --annotate torch --capture-steps 20:30 -o $R/g_$v -- $V/python train.py $N
    unset NVPROF_WRAP_CUPTI_RUNTIME
    $W report $R/g_$v --format json -o $S/g_$v.json >> $LOG 2>&1
    for f in $R/g_$v/cupti-*.sqlite; do [ -f "$f" ] && $V/python -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(dict(c.execute(\"select key, value from meta where key in ('api_records','records')\")), {t: c.execute(f'select count(*) from {t}').fetchone()[0] for t in ('kernel','runtime','driver')})" "$f" >> $LOG 2>&1; done
  done
  $V/python $S/window_compare.py $S/g_kinds.json $S/g_cbids.json >> $LOG 2>&1
fi
if [ "$PART" = H ]; then
  # Part H: which nsys option costs outside a capture range: nanoGPT iteration times (window 100:120), rounds
  # rotated, every variant pinned to the same cores (less drift between processes).
  ITERS=${ITERS:-600}; ROUNDS=${ROUNDS:-3}
  N="$(nano $ITERS) --log_interval=1"
  PIN="taskset -c ${CORES:-2-9}"
  EVT=""; $NSYS profile --help 2>&1 | grep -q -- "--cuda-event-trace" && EVT="--cuda-event-trace=false"
  VARIANTS=(none nsys_full nsys_cuda_nvtx nsys_cuda)
  for round in $(seq 1 $ROUNDS); do
    for i in 0 1 2 3; do
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-540} ] || { step "budget: repeat $round stopped"; break 2; }
      v=${VARIANTS[$(( (i + round) % 4 ))]}; name=h_${v}_$round; out=$R/$name/stdout.log
      case $v in
        none) mkdir -p $R/$name; $PIN $V/python train.py $N > $out 2>&1 ;;
        nsys_full) $PIN $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > /dev/null 2>&1 ;;
        nsys_cuda_nvtx) NVPROF_WRAP_NSYS_TRACE=cuda,nvtx $PIN $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > /dev/null 2>&1 ;;
        nsys_cuda) NVPROF_WRAP_NSYS_TRACE=cuda NVPROF_WRAP_NSYS_EXTRA="$EVT" $PIN $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > /dev/null 2>&1 ;;
      esac
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 >> $LOG 2>&1
    done
  done
  echo "nsys_cuda extra: $EVT" >> $LOG
  grep -h "^iters " $LOG
fi
if [ "$PART" = I ]; then
  # Part I, the issue's "done when": `run --capture-steps 100:120` (default options: the hardware sampler on) on
  # nanoGPT, 1,000 steps, unprofiled / cupti / nsys, ROUNDS rounds rotated. Per run: nanoGPT's own iteration times
  # (median outside the window, the window's edges, the slowest) and the job's wall time (manifest wall_s; the
  # unprofiled job's as timed here), then the command's whole wall time.
  step "in-process: the tracer inside a window vs CUPTI's floor, short loops, paired within rounds"
  ( cd $REPO; PYTHONPATH=$REPO timeout 200 $V/python benchmarks/gpu/window_launch_cost.py --steps 200 --rounds 16 >> $LOG 2>&1 )
  ITERS=${ITERS:-1000}; ROUNDS=${ROUNDS:-4}
  N="$(nano $ITERS) --log_interval=1"
  VARIANTS=(none cupti nsys)
  for round in $(seq 1 $ROUNDS); do
    for i in 0 1 2; do
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-540} ] || { step "budget: repeat $round stopped"; break 2; }
      v=${VARIANTS[$(( (i + round) % 3 ))]}; name=i_${v}_$round; out=$R/$name/stdout.log
      s=$EPOCHREALTIME
      if [ $v = none ]; then mkdir -p $R/$name; $V/python train.py $N > $out 2>&1; job=$(awk "BEGIN{print $EPOCHREALTIME - $s}")
      else $W run --backend $v --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1
        job=$($V/python -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" $R/$name/manifest.json); fi
      echo "command $name $(awk "BEGIN{print $EPOCHREALTIME - $s}")" >> $LOG
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --wall $job >> $LOG 2>&1
    done
  done
  TAIL=14 t rep_i_cupti $W report $R/i_cupti_1
  TAIL=14 t rep_i_nsys $W report $R/i_nsys_1
  grep -h "^iters \|^command " $LOG
fi
if [ "$PART" = J ]; then
  # Part J: what the window's edges hold the job (windows.jsonl held_ms, measured by the job's process), under
  # cupti and nsys (GPU metrics on, the default, and off): is nsys' ~3 s at the close its GPU-metrics sampler?
  N="$(nano ${ITERS:-1000}) --log_interval=1"
  for v in none cupti nsys nsys_nohw; do
    [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-240} ] || { step "budget: $v not run"; break; }
    name=j_$v; out=$R/$name/stdout.log; s=$EPOCHREALTIME
    case $v in
      none) mkdir -p $R/$name; $V/python train.py $N > $out 2>&1; job=$(awk "BEGIN{print $EPOCHREALTIME - $s}") ;;
      nsys_nohw) $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
      *) $W run --backend $v --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
    esac
    [ $v = none ] || job=$($V/python -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" $R/$name/manifest.json)
    $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --wall $job >> $LOG 2>&1
    [ -f $R/$name/windows.jsonl ] && grep -h '"open"\|"close"' $R/$name/windows.jsonl >> $LOG
  done
  TAIL=3 t rep_j_cupti $W report $R/j_cupti
  TAIL=3 t rep_j_nsys $W report $R/j_nsys
  grep -h "^iters \|held\|Capture window" $LOG | cut -c1-400
fi
if [ "$PART" = K ] || [ "$PART" = L ]; then
  # Parts K and L: nsys' cuProfilerStop (~3 s) beside the job (a helper thread with the job's context: the default for
  # nsys steps windows) against on the job's thread (NVPROF_WRAP_PROFILER_STOP=job) and unprofiled; ROUNDS rounds,
  # order rotated. K: ITERS 400, each window's launches, steps, the stop's time and the report's window line; a window
  # closing at the job's last step (the exit waits for the stop). L: ITERS 1000, the whole job's cost.
  [ $PART = K ] && ITERS=${ITERS:-400} || ITERS=${ITERS:-1000}
  N="$(nano $ITERS) --log_interval=1"
  vs=(none job aside)
  for round in $(seq 1 ${ROUNDS:-2}); do
    for k in 0 1 2; do
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-480} ] || { step "budget: repeat $round not run"; break 2; }
      v=${vs[$(( (k + round - 1) % 3 ))]}; name=${PART,,}_${v}_$round; out=$R/$name/stdout.log; s=$EPOCHREALTIME
      case $v in
        none) mkdir -p $R/$name; $V/python train.py $N > $out 2>&1; job=$(awk "BEGIN{print $EPOCHREALTIME - $s}") ;;
        job) NVPROF_WRAP_PROFILER_STOP=job $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        aside) $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
      esac
      echo "rc $name $? command $(awk "BEGIN{print $EPOCHREALTIME - $s}")" >> $LOG
      [ $v = none ] || job=$($V/python -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" $R/$name/manifest.json)
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --wall $job >> $LOG 2>&1
      [ $v = none ] && continue
      grep -h "window's close" $R/$name.txt >> $LOG
      grep -h '"open"\|"close"\|"stopped"' $R/$name/windows.jsonl >> $LOG
      $W report $R/$name --format json -o $S/$name.json >> $LOG 2>&1
      $V/python $REPO/benchmarks/gpu/window_json.py $S/$name.json $name >> $LOG 2>&1
    done
  done
  if [ $PART = K ]; then
    step "a window closing at the job's last step: the exit waits for nsys' stop"
    $W run --backend nsys --no-hardware --capture-steps 100:120 -o $R/k_last -- $V/python train.py $(nano 120) --log_interval=1 > $R/k_last.txt 2>&1
    echo "rc k_last $?" >> $LOG; grep -h "Capture window\|exit" $R/k_last.txt | cut -c1-600 >> $LOG
    grep -h '"close"\|"stopped"\|"end"' $R/k_last/windows.jsonl >> $LOG
    $W report $R/k_last --format json -o $S/k_last.json >> $LOG 2>&1; $V/python $REPO/benchmarks/gpu/window_json.py $S/k_last.json k_last >> $LOG 2>&1
    # a real capture of a window stopped aside, for tests/data (the capture gzipped, its run's records)
    mkdir -p ${OUT:-/tmp}/k_aside && for f in manifest.json windows.jsonl; do cp $R/k_aside_1/$f ${OUT:-/tmp}/k_aside/; done
    gzip -9 -c $R/k_aside_1/*.sqlite > ${OUT:-/tmp}/k_aside/nsys.sqlite.gz
    ls -la $R/k_aside_1 >> $LOG
  fi
  grep -h "^iters \|^window \|stopped\|^rc " $LOG | cut -c1-600
fi
if [ "$PART" = M ]; then
  # Part M: what nsys' presence costs the job outside any window (a window that never opens: nsys injected,
  # cudaProfilerApi never called) against unprofiled and against a 20-step window (default options: GPU metrics on,
  # the stop beside the job); ROUNDS rounds of ITERS (1000), order rotated; nanoGPT's own iteration times.
  N="$(nano ${ITERS:-1000}) --log_interval=1"
  vs=(none idle aside)
  for round in $(seq 1 ${ROUNDS:-3}); do
    for k in 0 1 2; do
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-480} ] || { step "budget: repeat $round not run"; break 2; }
      v=${vs[$(( (k + round - 1) % 3 ))]}; name=m_${v}_$round; out=$R/$name/stdout.log; s=$EPOCHREALTIME
      case $v in
        none) mkdir -p $R/$name; $V/python train.py $N > $out 2>&1; job=$(awk "BEGIN{print $EPOCHREALTIME - $s}") ;;
        idle) $W run --backend nsys --no-report --capture-steps 100000:100001 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        aside) $W run --backend nsys --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
      esac
      echo "rc $name $? command $(awk "BEGIN{print $EPOCHREALTIME - $s}")" >> $LOG
      [ $v = none ] || job=$($V/python -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" $R/$name/manifest.json)
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --wall $job >> $LOG 2>&1
      [ $v = aside ] && grep -h '"open"\|"close"\|"stopped"' $R/$name/windows.jsonl >> $LOG
      [ $v = none ] || { echo "log $name: $(grep -c '^iter ' $out) iteration lines, $(grep -c 'Capture range' $out) nsys lines"; grep -n 'Capture range' $out | head -4; } >> $LOG
    done
  done
  grep -h "^iters \|stopped\|^rc \|^log " $LOG | cut -c1-600
fi
if [ "$PART" = N ]; then
  # Part N: who writes into the job's stdout.log under nsys (a windowed job loses lines while nsys prints
  # "Capture range ..."): every process holding it open, its fd's flags and offset, sampled through the run.
  $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/n_diag -- $V/python train.py $(nano 300) --log_interval=1 > $R/n_diag.txt 2>&1 &
  for i in $(seq 1 40); do
    sleep 0.5
    for fd in /proc/[0-9]*/fd/*; do
      case $(readlink $fd 2>/dev/null) in *n_diag/stdout.log)
        pid=${fd#/proc/}; pid=${pid%%/*}; n=${fd##*/}
        echo "t$i pid $pid $(cat /proc/$pid/comm 2>/dev/null) fd $n $(tr '\n' ' ' < /proc/$pid/fdinfo/$n 2>/dev/null | cut -c1-60)" >> $LOG ;;
      esac
    done
  done
  wait
  echo "lines $(grep -c '^iter ' $R/n_diag/stdout.log) of 301"; grep -n "Capture range" $R/n_diag/stdout.log >> $LOG
  sort -k2 -u $LOG | grep "^t" | sort -u -k3,6 | head -30
  grep -n "Capture range" -B2 -A2 $R/n_diag/stdout.log | cat -A | cut -c1-120
fi
if [ "$PART" = O ]; then
  # Part O: is the slower stepping after an nsys window lasting (nsys still hooked after its capture range) or
  # passing (nsys generating its report beside the job right after the stop: measured, that ends ~0.3 s after the
  # stop)? Median iteration per 50 steps; VARIANTS (default "none aside"; also "job": the stop on the job's thread,
  # "idle": a window that never opens), ROUNDS rounds, the order rotated.
  N="$(nano ${ITERS:-1000}) --log_interval=1"
  read -ra vs <<< "${VARIANTS:-none aside}"
  for round in $(seq 1 ${ROUNDS:-2}); do
    for k in $(seq 0 $(( ${#vs[@]} - 1 ))); do
      v=${vs[$(( (k + round - 1) % ${#vs[@]} ))]}
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-240} ] || { step "budget: repeat $round not run"; break 2; }
      name=o_${v}_$round; out=$R/$name/stdout.log; s=$EPOCHREALTIME
      case $v in
        none) mkdir -p $R/$name; $V/python train.py $N > $out 2>&1; job=$(awk "BEGIN{print $EPOCHREALTIME - $s}") ;;
        aside) $W run --backend nsys --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        job) NVPROF_WRAP_PROFILER_STOP=job $W run --backend nsys --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        idle) $W run --backend nsys --no-report --capture-steps 100000:100001 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
      esac
      if [ $v != none ]; then job=$($V/python -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" $R/$name/manifest.json)
        grep -h '"stopped"' $R/$name/windows.jsonl >> $LOG; fi
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --wall $job --buckets 50 >> $LOG 2>&1
      gzip -c $out > ${OUT:-/tmp}/$name.stdout.log.gz
    done
  done
  grep -h "^iters \|^buckets \|stopped" $LOG | cut -c1-900
fi
if [ "$PART" = P ]; then
  # Part P: is the slower stepping after a capture range nsys' own? nsys run directly, no nvprof-wrap in the job
  # ("raw": benchmarks/gpu/profiler_range.py calls cudaProfilerStart/Stop on the job's thread at optimizer steps 100 and
  # 120, as a user's script does; "raw_cuda": the same with --trace=cuda only) against `run --capture-steps 100:120`
  # ("aside") and the unprofiled job, all without GPU metrics (the raw runs have none). Median iteration per 50
  # steps; VARIANTS, ROUNDS rounds, the order rotated.
  cp $REPO/benchmarks/gpu/profiler_range.py $S/
  N="$(nano ${ITERS:-1000}) --log_interval=1"
  RAW="$NSYS profile --sample=none --cpuctxsw=none --capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite=true"
  read -ra vs <<< "${VARIANTS:-none raw aside raw_cuda}"
  for round in $(seq 1 ${ROUNDS:-3}); do
    for k in $(seq 0 $(( ${#vs[@]} - 1 ))); do
      v=${vs[$(( (k + round - 1) % ${#vs[@]} ))]}
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-500} ] || { step "budget: repeat $round not run"; break 2; }
      name=p_${v}_$round; out=$R/$name/stdout.log; mkdir -p $R/$name; s=$EPOCHREALTIME
      # what runs beside the job after its window: the busiest processes over one second, 20 s in
      (sleep 20; echo "top $name"; top -b -n 2 -d 1 -w 160 | awk '/^top -/{n++} n==2' | sed -n '7,14p') >> $LOG 2>&1 &
      case $v in
        none) $V/python train.py $N > $out 2>&1 ;;
        raw) $RAW --trace=cuda,nvtx,cublas,cudnn -o $R/$name/nsys $V/python $S/profiler_range.py 100:120 train.py $N > $out 2>&1 ;;
        raw_cuda) $RAW --trace=cuda -o $R/$name/nsys $V/python $S/profiler_range.py 100:120 train.py $N > $out 2>&1 ;;
        aside) $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
      esac
      job=$(awk "BEGIN{print $EPOCHREALTIME - $s}")
      grep -h '"edge"' $out >> $LOG; [ -f $R/$name/windows.jsonl ] && grep -h '"stopped"' $R/$name/windows.jsonl >> $LOG
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --wall $job --buckets 50 >> $LOG 2>&1
    done
  done
  (cd $R && tar -czf ${OUT:-/tmp}/p_stdout.tgz p_*/stdout.log p_*/windows.jsonl 2>/dev/null)
  wait; grep -h "^iters \|^buckets \|stopped\|edge" $LOG | cut -c1-900
fi
if [ "$PART" = Q ]; then
  # Part Q: is it the CUPTI nsys leaves subscribed after its capture range that slows the job's steps? "detach":
  # our window, and once nsys' stop returned, cuptiFinalize on nsys' libcupti at the job's next step mark
  # (tracer/window.py; first run as a knob, NVPROF_WRAP_NSYS_DETACH=1, now the default) — against "attached"
  # (NVPROF_WRAP_NSYS_DETACH=0; "aside" in the first run: then the default) and the unprofiled job, all
  # --no-hardware, ROUNDS rounds rotated; then is anything lost or broken: each detach run's exit, its job's output
  # searched for errors, its report's launches and steps (7,560 in steps 100-119 when whole); "idle": nsys injected,
  # its window never opened (what nsys' presence alone costs); "idle_cn" / "detach_cn": the same with
  # --trace=cuda,nvtx (no cuBLAS/cuDNN trace, which no report reads); "twin": the unprofiled job again
  # (what two identical runs differ by on this machine); FIRST: the first round's number (runs of a
  # later call keep their own names); DATA=1: one more default run of 400 steps for tests/data.
  N="$(nano ${ITERS:-1000}) --log_interval=1"
  read -ra vs <<< "${VARIANTS:-none attached detach}"
  for round in $(seq ${FIRST:-1} $(( ${FIRST:-1} + ${ROUNDS:-3} - 1 ))); do
    for k in $(seq 0 $(( ${#vs[@]} - 1 ))); do
      v=${vs[$(( (k + round - 1) % ${#vs[@]} ))]}
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-400} ] || { step "budget: repeat $round not run"; break 2; }
      name=q_${v}_$round; out=$R/$name/stdout.log; mkdir -p $R/$name
      case $v in
        none|twin) $V/python train.py $N > $out 2>&1 ;;
        aside) $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        attached) NVPROF_WRAP_NSYS_DETACH=0 $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        detach) $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1; echo "rc $name $?" >> $LOG ;;
        idle) $W run --backend nsys --no-hardware --no-report --capture-steps 100000:100001 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        idle_cn) NVPROF_WRAP_NSYS_TRACE=cuda,nvtx $W run --backend nsys --no-hardware --no-report --capture-steps 100000:100001 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1 ;;
        detach_cn) NVPROF_WRAP_NSYS_TRACE=cuda,nvtx $W run --backend nsys --no-hardware --no-report --capture-steps 100:120 -o $R/$name -- $V/python train.py $N > $R/$name.txt 2>&1; echo "rc $name $?" >> $LOG ;;
      esac
      [ -f $R/$name/windows.jsonl ] && grep -h '"stopped"\|"detached"' $R/$name/windows.jsonl | cut -c1-600 >> $LOG
      $V/python $REPO/benchmarks/gpu/nano_iterations.py $name $out --window 100:120 --buckets 100 >> $LOG 2>&1
    done
  done
  step "what the detach runs kept"
  for d in $R/q_detach_*; do
    [ -d $d ] || continue; n=$(basename $d)
    $V/python -c "import json,sys; m=json.load(open(sys.argv[1])); print('manifest', sys.argv[2], 'exit', m.get('exit_code'), 'wall', m.get('wall_s'))" $d/manifest.json $n >> $LOG 2>&1
    grep -i -n "error\|segmentation\|fault\|abort\|cupti" $d/stdout.log | grep -v FutureWarning | head -5 >> $LOG
    tail -3 $R/$n.txt >> $LOG
    $W report $d --format json -o $S/$n.json >> $LOG 2>&1 && $V/python $REPO/benchmarks/gpu/window_json.py $S/$n.json $n >> $LOG 2>&1
  done
  if [ "${DATA:-0}" = 1 ]; then
    step "a real run whose nsys CUPTI was detached, for tests/data (the capture gzipped, its run's records)"
    $W run --backend nsys --no-hardware --capture-steps 100:120 -o $R/q_data -- $V/python train.py $(nano 400) > $R/q_data.txt 2>&1
    echo "rc q_data $?" >> $LOG; grep -h "Capture window" $R/q_data.txt | cut -c1-700 >> $LOG; cat $R/q_data/windows.jsonl >> $LOG
    mkdir -p ${OUT:-/tmp}/q_data && cp $R/q_data/manifest.json $R/q_data/windows.jsonl ${OUT:-/tmp}/q_data/
    gzip -9 -c $R/q_data/*.sqlite > ${OUT:-/tmp}/q_data/nsys.sqlite.gz
  fi
  (cd $REPO && python3 -m benchmarks.window_rounds $R) >> $LOG 2>&1
  (cd $R && tar -czf ${OUT:-/tmp}/q_stdout.tgz q_*/stdout.log q_*/windows.jsonl 2>/dev/null)
  grep -h "^iters \|^buckets \|stopped\|detached\|^rc \|^manifest\|^window \|^headline \|^| \|Capture window" $LOG | cut -c1-700
fi
if [ "$PART" = R ]; then
  # Part R: per CUDA call, in one process, before / inside / after nsys' capture range
  # (benchmarks/gpu/nsys_after_range.py: an elementwise kernel, a cuBLAS matmul, a cuDNN conv2d), nsys run directly:
  # "none" unprofiled; "full" nsys' default trace set as run uses it (cuda,nvtx,cublas,cudnn), left attached;
  # "full_detach" the same with the window's detach after the stop; "cn" / "cn_detach" --trace=cuda,nvtx. VARIANTS,
  # ROUNDS rounds, the order rotated; then the table (benchmarks/nsys_after_summary.py).
  cp $REPO/benchmarks/gpu/nsys_after_range.py $S/
  RAW="$NSYS profile --sample=none --cpuctxsw=none --capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite=true"
  read -ra vs <<< "${VARIANTS:-none full full_detach cn cn_detach}"
  for round in $(seq 1 ${ROUNDS:-4}); do
    for k in $(seq 0 $(( ${#vs[@]} - 1 ))); do
      v=${vs[$(( (k + round - 1) % ${#vs[@]} ))]}
      [ $(( $(date +%s) - START )) -lt ${BUDGET_S:-400} ] || { step "budget: repeat $round not run"; break 2; }
      name=r_${v}_$round; mkdir -p $R/$name; out=$R/$name/stdout.log
      P="$V/python $S/nsys_after_range.py --name $name"
      case $v in
        none) $P > $out 2>&1 ;;
        full) $RAW --trace=cuda,nvtx,cublas,cudnn -o $R/$name/nsys $P > $out 2>&1 ;;
        full_detach) $RAW --trace=cuda,nvtx,cublas,cudnn -o $R/$name/nsys $P --detach > $out 2>&1 ;;
        cn) $RAW --trace=cuda,nvtx -o $R/$name/nsys $P > $out 2>&1 ;;
        cn_detach) $RAW --trace=cuda,nvtx -o $R/$name/nsys $P --detach > $out 2>&1 ;;
      esac
      echo "rc $name $?" >> $LOG
      grep -h '^{"run"' $out | grep -v '"warmup"' >> $LOG
    done
  done
  (cd $R && tar -czf ${OUT:-/tmp}/r_stdout.tgz r_*/stdout.log 2>/dev/null)
  (cd $REPO && python3 -m benchmarks.nsys_after_summary $LOG) >> $LOG 2>&1
  grep -h "^rc \|^| \|detached" $LOG | cut -c1-400
fi
if [ "$PART" = B2 ]; then
  ITERS=${ITERS:-1000}; N=$(nano $ITERS)
  step "the threads a window may open from"
  for v in plain push main; do PYTHONPATH=$REPO timeout 60 $V/python $REPO/benchmarks/gpu/window_thread_probe.py $v >> $LOG 2>&1; done
  TAIL=4 compare cupti
  TAIL=12 times
  step "fresh processes: CUPTI attached but idle (a window never reached) vs no profiler, launch-heavy job"
  cp $REPO/workloads/launch_rate.py $S/
  for round in 1 2 3; do
    for v in none idle; do
      if [ $v = none ]; then $V/python $S/launch_rate.py --kind launch --steps 800 >> $LOG 2>&1
      else $W run --backend cupti --no-report --capture-steps 100000:100001 -o $R/idle_$round -- \
        $V/python $S/launch_rate.py --kind launch --steps 800 > $R/idle_$round.txt 2>&1; grep -h '"loop_s"' $R/idle_$round/stdout.log >> $LOG; fi
    done
  done
  step "in-process: the tracer inside a window vs CUPTI's floor (same kinds)"
  cd $REPO; PYTHONPATH=$REPO timeout 240 $V/python benchmarks/gpu/window_launch_cost.py --steps 800 --rounds 7 >> $LOG 2>&1
  grep -h "^job " $LOG
fi
step done
