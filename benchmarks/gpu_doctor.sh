#!/usr/bin/env bash
# `voiced doctor` on a GPU machine: the checklist, its JSON, the real fp16 matmul test and a
# short table of the GPU facts. Writes everything to $OUT (default ./gpu-doctor-out).
#
#   OUT=/tmp/out benchmarks/gpu_doctor.sh            # uses .venv when present
#   CONFIG=config/voiced.toml LOAD=1 benchmarks/gpu_doctor.sh   # also load+warm up the models
#
# Exit status: the doctor's (1 when a required check failed), else pytest's.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-doctor-out}"
CONFIG="${CONFIG:-config/voiced.toml}"
mkdir -p "$OUT"
if [ -f .venv/bin/activate ]; then
    # shellcheck disable=SC1091
    . .venv/bin/activate
elif [ -d .whl ]; then
    # an offline GPU machine: voiced's dependencies carried as wheels (see the device README)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
command -v python >/dev/null || python() { python3 "$@"; }
# entry points (the built-in plugins) need voiced installed; offline, without build isolation
python -c "import voiced_plugins" 2>/dev/null \
    || python -m pip install -q --no-deps --no-build-isolation --no-index -e . \
    || export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

{
    echo "== $(date -u +%FT%TZ) $(uname -srm)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv
    command -v rocminfo >/dev/null && rocminfo | grep -E "^\s+Name:\s+gfx" | sort -u
    python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda,
'hip', getattr(torch.version, 'hip', None), 'available', torch.cuda.is_available())" 2>&1
} | tee "$OUT/machine.txt"

# `voiced doctor` once cli.py wires it; the module entry point works either way.
if voiced doctor --help >/dev/null 2>&1; then DOCTOR=(voiced --config "$CONFIG" doctor);
else DOCTOR=(python -m voiced.doctor --config "$CONFIG"); fi
EXTRA=()
[ "${LOAD:-0}" = "1" ] && EXTRA+=(--load)

"${DOCTOR[@]}" "${EXTRA[@]}" | tee "$OUT/doctor.txt"
doctor_rc=${PIPESTATUS[0]}
"${DOCTOR[@]}" "${EXTRA[@]}" --json > "$OUT/doctor.json"

python - "$OUT/doctor.json" <<'EOF' | tee "$OUT/gpu-table.txt"
import json, sys
report = json.load(open(sys.argv[1]))
print(f"\n{'check':<34} {'status':<6} detail")
for c in report["checks"]:
    if c["section"] in ("gpu", "engines") or c["name"].startswith("load "):
        print(f"{c['name'][:34]:<34} {c['status']:<6} {c['detail'][:110]}")
t = report["facts"]["torch"]
print(f"\ntorch backend={t['backend']} version={t['version']} hip={t['hip_version'] or '-'} "
      f"cuda={t['cuda_version'] or '-'} devices={[d['name'] for d in t['devices']]}")
print(f"ctranslate2 cuda devices={report['facts']['ctranslate2']['cuda_device_count']}  "
      f"onnxruntime providers={report['facts']['onnxruntime']['providers']}")
print(f"overall ok={report['ok']} counts={report['counts']}")
EOF

python -m pytest -q -p no:cacheprovider tests/test_doctor.py -k "gpu or matmul" -rs \
    | tee "$OUT/pytest-gpu.txt"
pytest_rc=${PIPESTATUS[0]}
echo "doctor exit $doctor_rc, pytest exit $pytest_rc" | tee -a "$OUT/machine.txt"
[ "$doctor_rc" -ne 0 ] && exit "$doctor_rc"
exit "$pytest_rc"
