#!/bin/sh
# Runs its arguments where an NVIDIA GPU answers, else says why not and exits
# 77 (ctest's SKIP_RETURN_CODE for the GPU-only tests): CI machines have none.
if nvidia-smi -L >/dev/null 2>&1; then
  exec "$@"
fi
echo "skipped: no NVIDIA GPU on this machine (nvidia-smi -L fails); the cuda engine's checks need one"
exit 77
