#!/usr/bin/env bash
# Create .venv and install kbqa into it (editable), with the extras named as arguments
# (dev, finetune, qwen, milvus, server, postgres, hf, bge, docs, web; e.g. `bash scripts/setup.sh milvus server`). llama-cpp-python is published only as source: it is compiled once (about 5
# minutes on 2 cores) and its wheel cached in $KBQA_WHEEL_CACHE (default ~/.cache/kbqa/wheels), so later
# installs on the same machine take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=$(IFS=,; echo "$*")
python=${PYTHON:-python3}
wheels=${KBQA_WHEEL_CACHE:-$HOME/.cache/kbqa/wheels}
llama_version=0.3.36

[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

if ! ls "$wheels"/llama_cpp_python-"$llama_version"-*.whl >/dev/null 2>&1; then
  echo "setup: compiling llama-cpp-python $llama_version once (about 5 minutes on 2 cores)..."
  mkdir -p "$wheels"
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) .venv/bin/python -m pip wheel -q --no-deps \
    "llama-cpp-python==$llama_version" -w "$wheels"
fi

.venv/bin/python -m pip install -q --find-links "$wheels" -e ".${extras:+[$extras]}"
echo "setup: done. Activate with: . .venv/bin/activate"
