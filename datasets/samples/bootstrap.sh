#!/usr/bin/env bash
# Sample pages ship in the repository: nothing to download. Verify that every page listed in
# metadata.yaml is present and is a PNG. Idempotent; exits non-zero naming what is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
meta="$here/metadata.yaml"
[[ -f "$meta" ]] || { echo "datasets/samples: metadata.yaml is missing; run scripts/make_sample_pages.py" >&2; exit 1; }
missing=0
count=0
while IFS= read -r file; do
    count=$((count + 1))
    if [[ ! -f "$here/$file" ]]; then
        echo "datasets/samples: missing $file (regenerate: python3 scripts/make_sample_pages.py)" >&2
        missing=$((missing + 1))
    elif [[ "$(head -c 8 "$here/$file" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]]; then
        echo "datasets/samples: $file is not a PNG" >&2
        missing=$((missing + 1))
    fi
done < <(sed -n 's/^  - file: *//p' "$meta")
if (( count == 0 )); then
    echo "datasets/samples: metadata.yaml lists no pages" >&2
    exit 1
fi
if (( missing > 0 )); then
    exit 1
fi
echo "datasets/samples: $count pages present"
