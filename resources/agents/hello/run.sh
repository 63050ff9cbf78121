#!/usr/bin/env bash
# A command agent in a dozen lines (docs/agents.md): sabench mounts this folder read-only at
# /agent and runs `bash /agent/run.sh` in /submission, the folder that becomes the submission.
# It reads the paper at /paper and writes a repository with a reproduce.sh; a real agent would
# call its model here (with network: full and the key variable named in env:).
set -euo pipefail
title=$(grep -m1 '^# ' "$SABENCH_PAPER/paper.md" | sed 's/^# //')
printf '# %s\n\nSeed %s; written by the hello agent, which reproduces nothing.\n' \
    "$title" "$SABENCH_SEED" > README.md
cat > reproduce.sh <<'SH'
#!/usr/bin/env bash
echo '{}' > results.json
SH
echo "hello agent: wrote README.md and reproduce.sh for '$title'"
