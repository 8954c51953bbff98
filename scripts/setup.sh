#!/usr/bin/env bash
# Create .venv and install kbqa into it (editable), with the extras named as arguments
# (dev, finetune, qwen, milvus, server, postgres, hf, bge, docs, web; e.g. `bash scripts/setup.sh milvus server`). llama-cpp-python is published only as source: it is compiled once (about 5
# minutes on 2 cores) and its wheel cached in $KBQA_WHEEL_CACHE (default ~/.cache/kbqa/wheels), so later
# installs on the same machine take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=$(IFS=,; echo "$*")
python=${PYTHON:-python3}
llama_version=0.3.36
# The wheel folder and build flags for this CPU (an AMX CPU gets a build without AMX): see
# scripts/wheel-cache.sh. Its errors (KBQA_WHEEL_CACHE a file, ...) stop setup before anything is made.
where=$(bash scripts/wheel-cache.sh)
wheels=$(sed -n 1p <<<"$where")
cmake_args=$(sed -n 2p <<<"$where")

[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

if ! ls "$wheels"/llama_cpp_python-"$llama_version"-*.whl >/dev/null 2>&1; then
  echo "setup: compiling llama-cpp-python $llama_version once (about 5 minutes on 2 cores)..."
  mkdir -p "$wheels"
  # --no-cache-dir: pip's own wheel cache does not know the CMAKE_ARGS a wheel was built with
  CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) .venv/bin/python -m pip wheel \
    -q --no-cache-dir --no-deps "llama-cpp-python==$llama_version" -w "$wheels"
fi

# The cached wheel itself, so a venv made before the AMX rule gets the wheel built by it
.venv/bin/python -m pip install -q --no-deps --force-reinstall --no-index --find-links "$wheels" \
  "llama-cpp-python==$llama_version"
.venv/bin/python -m pip install -q --find-links "$wheels" -e ".${extras:+[$extras]}"
echo "setup: done. Activate with: . .venv/bin/activate"
