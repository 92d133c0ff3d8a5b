#!/usr/bin/env bash
# Table 3 at the smoke profile on a single-node SLURM started here, against the same table run in
# one call: `reproduce table3 --emit-slurm` writes a job array per dependency level and the report
# job; they run through sbatch with dependencies; the report's records must equal the local run's
# (provenance, timings and peak memory aside). Needs root and Debian's packages (slurmctld, slurmd,
# slurm-client, munge); `nox -s slurm_smoke` runs it. Usage: benchmarks/slurm_smoke.sh WORKDIR
set -euo pipefail
WORK=$(realpath -m "${1:-.slurm-smoke}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$WORK" && mkdir -p "$WORK"/{state,spool,log,run}

if ! command -v slurmctld > /dev/null; then
  apt-get install -y -q slurmctld slurmd slurm-client munge > "$WORK/log/apt.log"
fi

# Stopped on exit, whatever happens after this point: the SLURM daemons, and a munged this
# script started (by its pid file; one already running is left alone).
STARTED_MUNGE=0
stop() {
  for pid in "$WORK/run/slurmd.pid" "$WORK/run/slurmctld.pid"; do
    if [ -f "$pid" ]; then kill "$(cat "$pid")" 2> /dev/null || true; fi
  done
  if [ "$STARTED_MUNGE" = 1 ] && [ -f /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2> /dev/null || true
  fi
}
trap stop EXIT

# munge: its key comes with the package; the daemon runs as the munge user.
mkdir -p /run/munge && chown munge:munge /run/munge
if ! pgrep -x munged > /dev/null; then runuser -u munge -- /usr/sbin/munged; STARTED_MUNGE=1; fi

HOST=$(hostname -s)
CPUS=$(nproc)
cat > "$WORK/slurm.conf" <<EOF
ClusterName=smoke
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/backfill
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/run/slurmctld.pid
SlurmdPidFile=$WORK/run/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ReturnToService=2
NodeName=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=main Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$WORK/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  if sinfo -h -o %T 2> /dev/null | grep -q idle; then break; fi
  sleep 1
done
sinfo

# The data, from the cache this machine has (fetched where missing), for both runs.
longred-bench data fetch --sources brown austen sotu benchmarks > /dev/null
REAL=${LONGRED_CACHE:-$HOME/.cache/longred-bench}
for run in local slurm; do
  mkdir -p "$WORK/cache-$run"
  for dir in corpora benchmarks; do ln -s "$REAL/$dir" "$WORK/cache-$run/$dir"; done
done

cd "$ROOT"
start=$(date +%s)
LONGRED_CACHE="$WORK/cache-local" longred-bench reproduce table3 --profile smoke \
  --out "$WORK/report-local" --quiet
echo "local run: $(( $(date +%s) - start )) s"

export LONGRED_CACHE="$WORK/cache-slurm"
longred-bench reproduce table3 --profile smoke --emit-slurm "$WORK/jobs" \
  --out "$WORK/report-slurm"
start=$(date +%s)
REPORT_JOB=$(bash "$WORK/jobs/submit.sh")
echo "submitted; report job $REPORT_JOB"
for _ in $(seq 1800); do
  if [ -z "$(squeue -h -o %i)" ]; then break; fi
  sleep 2
done
echo "SLURM run: $(( $(date +%s) - start )) s"
sacct -n -X -o JobName%24,State 2> /dev/null || true
grep -h "" "$WORK"/jobs/logs/*report*.out | tail -3

python - "$WORK" <<'EOF'
"""The SLURM run's records equal the local run's (provenance, timings, peak memory and the
machine's load aside)."""
import json
import re
import sys
from pathlib import Path

from longred_bench.results import read_records

work = Path(sys.argv[1])


def normal(run: str) -> list[str]:
    out = []
    for r in read_records(work / f"report-{run}" / "table3.jsonl.gz"):
        r.pop("provenance", None)
        if "step_seconds" in r:  # a training run's wall time after each step
            r["step_seconds"] = [0] * len(r["step_seconds"])
        text = json.dumps(r, sort_keys=True).replace(str(work / f"cache-{run}"), "<cache>")
        # measurements of the run, not results: its wall times, the process's peak memory and
        # the machine's load while it trained
        text = re.sub(r'"seconds": [0-9.e+-]+', '"seconds": 0', text)
        text = re.sub(r'"(load_1min_start|load_1min_end)": [0-9.e+-]+', r'"\1": 0', text)
        out.append(re.sub(r'"peak_memory_mib": [0-9.e+-]+', '"peak_memory_mib": 0', text))
    return out


local, slurm = normal("local"), normal("slurm")
assert len(local) == len(slurm) > 0, (len(local), len(slurm))
assert local == slurm, "the SLURM run's records differ from the local run's"
print(f"the SLURM report's {len(slurm)} records equal the local run's")
EOF
