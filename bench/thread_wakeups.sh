#!/usr/bin/env bash
# Per-thread CPU and wake-ups of a running process over an interval, read from /proc:
#   bench/thread_wakeups.sh PID SECONDS [THREAD_NAME]
# prints, per thread (or only those named THREAD_NAME, e.g. hotkey-reporter): its name, CPU
# milliseconds per second (utime + stime, at the kernel's 10 ms clock-tick resolution) and
# voluntary context switches per second (each time the thread slept and was woken).
set -euo pipefail
pid=$1 dur=$2 name=${3:-}
snap() {
  for t in /proc/"$pid"/task/*; do
    local stat comm cpu vol
    stat=$(sed 's/.*) //' "$t/stat" 2>/dev/null) || continue
    comm=$(tr ' ' '_' <"$t/comm")
    cpu=$(awk '{print $12 + $13}' <<<"$stat")
    vol=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")
    echo "${t##*/} $cpu $vol $comm"
  done | sort
}
tick=$(getconf CLK_TCK)
a=$(snap); sleep "$dur"; b=$(snap)
join <(echo "$a") <(echo "$b") |
  awk -v d="$dur" -v hz="$tick" -v want="$name" \
    'want == "" || $4 == want {printf "%-16s tid %-8s cpu %6.2f ms/s  wake-ups %7.1f /s\n", $4, $1, ($5 - $2) * 1000 / hz / d, ($6 - $3) / d}'
