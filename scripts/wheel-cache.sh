#!/usr/bin/env bash
# Print where llama-cpp-python's wheel for this machine is cached (line 1) and the CMAKE_ARGS it
# is built with (line 2). scripts/setup.sh builds and installs that wheel; tests/test_wheel.py
# installs the same one into a fresh venv, so both agree on the folder.
#
# The folder is $KBQA_WHEEL_CACHE (default ~/.cache/kbqa/wheels), or below it:
#   cmake-<cksum>  when CMAKE_ARGS of your own are set (their wheel is cached apart);
#   no-amx         on an x86 CPU with AMX (Intel Sapphire Rapids and later): llama.cpp built for
#                  the native CPU takes its AMX path, which crashes (SIGSEGV in llama_decode) on
#                  the Gemma 3 GGUF (seen with llama-cpp-python 0.3.36 on 2026-12-05, the kernel
#                  granting AMX). There the build names every other x86 feature the CPU has
#                  instead of -march=native.
# Exits 2 when $KBQA_WHEEL_CACHE is a file.
set -euo pipefail

wheels=${KBQA_WHEEL_CACHE:-$HOME/.cache/kbqa/wheels}
if [ -e "$wheels" ] && [ ! -d "$wheels" ]; then
  echo "setup: KBQA_WHEEL_CACHE=$wheels is a file, not a folder: point it at a folder" >&2
  exit 2
fi

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
printf '%s\n%s\n' "$wheels" "$cmake_args"
