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
if [ -e "$wheels" ] && [ ! -d "$wheels" ]; then
  echo "setup: KBQA_WHEEL_CACHE=$wheels is a file, not a folder: point it at a folder" >&2
  exit 2
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

# On an x86 CPU with AMX (Intel Sapphire Rapids and later), llama.cpp built for the native CPU
# takes its AMX path, which crashes (SIGSEGV in llama_decode) on the Gemma 3 GGUF: seen with
# llama-cpp-python 0.3.36 on 2026-12-05, the kernel granting AMX. There the build names every
# other x86 feature the CPU has instead of -march=native, and its wheel is cached apart.
# CMAKE_ARGS of your own replace that choice; their wheel is cached in a folder of their own.
cmake_args=${CMAKE_ARGS:-}
if [ -n "${cmake_args//[[:space:]]/}" ]; then  # blanks alone are no settings
  wheels="$wheels/cmake-$(printf %s "$cmake_args" | cksum | cut -d' ' -f1)"
elif cmake_args="" && grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  cmake_args="-DGGML_NATIVE=OFF"
  for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
      avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
    case " $flags " in *" ${pair%%:*} "*) cmake_args="$cmake_args -DGGML_${pair#*:}=ON" ;; esac
  done
  wheels="$wheels/no-amx"
fi

if ! ls "$wheels"/llama_cpp_python-"$llama_version"-*.whl >/dev/null 2>&1; then
  echo "setup: compiling llama-cpp-python $llama_version once (about 5 minutes on 2 cores)..."
  mkdir -p "$wheels"
  # --no-cache-dir: pip's own wheel cache does not know the CMAKE_ARGS a wheel was built with
  CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) .venv/bin/python -m pip wheel \
    -q --no-cache-dir --no-deps "llama-cpp-python==$llama_version" -w "$wheels"
fi

# The cached wheel itself, so a venv made before the AMX rule above gets the wheel built by it
.venv/bin/python -m pip install -q --no-deps --force-reinstall --no-index --find-links "$wheels" \
  "llama-cpp-python==$llama_version"
.venv/bin/python -m pip install -q --find-links "$wheels" -e ".${extras:+[$extras]}"
echo "setup: done. Activate with: . .venv/bin/activate"
