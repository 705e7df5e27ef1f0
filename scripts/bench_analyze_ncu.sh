#!/usr/bin/env bash
# Wall time and peak RSS of `llmprof analyze ncu` on a large synthetic Nsight Compute CSV
# (issue #13: a 200 MB raw-page export of ~46k kernels took 31 s and 7.7 GB).
#
# The CSV is synthesised from the layout of llmprof's own stage 2 capture on an H100
# (tests/fixtures/stage2/ncu-h100-llmprof/k0{2,4}_*.csv: `--page raw --csv`, 630 columns, a units
# row, ~4.4 KB per kernel row): the header and units row once, then N data rows copied from the two
# fixtures with a fresh ID, one of 64 kernel names and a perturbed duration. It is written to
# tmp/bench_analyze_ncu/ (ignored by git), never committed.
#
# usage: scripts/bench_analyze_ncu.sh [KERNELS=46000] [RUNS=3]
#   LLMPROF=path/to/llmprof (default target/release/llmprof; built with cargo if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
KERNELS=${1:-46000}
RUNS=${2:-3}
LLMPROF=${LLMPROF:-target/release/llmprof}
OUT=tmp/bench_analyze_ncu
CSV=$OUT/csv/big_raw.csv
FIX=tests/fixtures/stage2/ncu-h100-llmprof

if [[ ! -x $LLMPROF ]]; then
    cargo build --release -p llmprof --bin llmprof
fi
mkdir -p "$OUT/csv"

# Regenerate only when the kernel count changed.
if [[ ! -f $CSV || $(cat "$OUT/kernels" 2>/dev/null) != "$KERNELS" ]]; then
    a=$(ls $FIX/k02_*.csv)
    b=$(ls $FIX/k04_*.csv)
    {
        sed -n '1,2p' "$a" # ==PROF== lines, as ncu writes them without --log-file
        sed -n '3,4p' "$a" # header, units row
        awk -v n="$KERNELS" -v fa="$a" -v fb="$b" '
            # Line n of file f (3: the header, 5: the kernel row).
            function line(f, n,   l, i) {
                i = 0
                while ((getline l < f) > 0) if (++i == n) break
                close(f)
                return l
            }
            BEGIN {
                ra = line(fa, 5); rb = line(fb, 5); hdr = line(fa, 3)
                na = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"
                nb = "nvjet_sm90_tst_384x8_64x4_2x1_v_bz_TNT"
                nh = split(hdr, h, "\",\"")
                for (i = 1; i <= nh; i++) if (h[i] == "gpu__time_duration.sum") dur = i
                for (k = 0; k < n; k++) {
                    if (k % 2 == 0) { row = ra; name = na } else { row = rb; name = nb }
                    m = split(row, c, "\",\"")   # cells; c[1] keeps its opening quote
                    c[1] = "\"" k                     # ID
                    # each launch its own duration: +0..99 ns
                    v = c[dur]; gsub(",", "", v); c[dur] = v + k % 100
                    out = c[1]
                    for (i = 2; i <= m; i++) out = out "\",\"" (i == 7 ? name "_v" (k % 64) : c[i])
                    print out
                }
            }'
    } >"$CSV"
    echo "$KERNELS" >"$OUT/kernels"
fi
size=$(stat -c %s "$CSV")
echo "input: $CSV, $KERNELS kernels, $((size / 1000000)) MB"
echo "binary: $LLMPROF ($(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+dirty'))"

for r in $(seq 1 "$RUNS"); do
    /usr/bin/time -v "$LLMPROF" analyze ncu "$OUT/csv" --format json >"$OUT/out.json" 2>"$OUT/time.txt" || {
        cat "$OUT/time.txt"
        exit 1
    }
    wall=$(grep 'Elapsed (wall clock)' "$OUT/time.txt" | awk '{print $NF}')
    rss=$(grep 'Maximum resident set size' "$OUT/time.txt" | awk '{print $NF}')
    echo "run $r: wall ${wall} (m:ss), peak RSS $((rss / 1024)) MiB"
done
python3 - "$OUT/out.json" <<'EOF' 2>/dev/null || true
import json, sys
d = json.load(open(sys.argv[1]))
print(f"output: {len(d['kernels'])} kernels in the JSON")
EOF
