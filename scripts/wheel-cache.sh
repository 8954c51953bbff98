#!/usr/bin/env bash
# Print where llama-cpp-python's wheel for this machine is cached (line 1, an absolute path) and
# the CMAKE_ARGS it is built with (line 2, on one line). scripts/setup.sh builds and installs that
# wheel; tests/test_wheel.py and docs/usage.md install the same one into a fresh venv, so all
# agree on the folder.
#
# The folder is $KBQA_WHEEL_CACHE (default ~/.cache/kbqa/wheels), or below it:
#   cmake-<cksum>  when CMAKE_ARGS of your own are set (their wheel is cached apart);
#   no-amx         on an x86 CPU with AMX (Intel Sapphire Rapids and later): llama.cpp built for
#                  the native CPU takes its AMX path, which crashes (SIGSEGV in llama_decode) on
#                  the Gemma 3 GGUF (seen with llama-cpp-python 0.3.36 on 2026-12-05, the kernel
#                  granting AMX). There the build names every other x86 feature the CPU has
#                  instead of -march=native.
# Exits 2, naming the problem, when that folder cannot be one (a file, a broken link, a name with
# a line break) or no home folder is known.
set -euo pipefail

fail() { echo "wheel-cache: $*" >&2; exit 2; }

home=${HOME:-$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6 || true)}
if [ -n "${KBQA_WHEEL_CACHE:-}" ]; then
  wheels=$KBQA_WHEEL_CACHE
  named_by="KBQA_WHEEL_CACHE"
elif [ -n "$home" ]; then
  wheels=$home/.cache/kbqa/wheels
  named_by="the home folder ($home/.cache/kbqa/wheels; set KBQA_WHEEL_CACHE to another folder)"
else
  fail "no home folder is known (HOME is unset): set KBQA_WHEEL_CACHE to a folder"
fi
case $wheels in *$'\n'*|*$'\r'*) fail "$named_by holds a line break: name a folder without one" ;; esac
case $wheels in /*) ;; *) wheels=$PWD/$wheels ;; esac
while [ "${wheels%/}" != "$wheels" ] && [ "$wheels" != / ]; do wheels=${wheels%/}; done

cmake_args=${CMAKE_ARGS:-}
cmake_args=${cmake_args//$'\n'/ }  # one line: a line break in CMAKE_ARGS is a blank to cmake
cmake_args=${cmake_args//$'\r'/ }
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

# the folder and every folder above it must be a folder or not exist yet
path=$wheels
while [ -n "$path" ] && [ "$path" != / ]; do
  if [ -L "$path" ] && [ ! -e "$path" ]; then
    fail "$path is a link to nothing: point KBQA_WHEEL_CACHE at a folder"
  elif [ -e "$path" ] && [ ! -d "$path" ]; then
    fail "$path is a file, not a folder: point KBQA_WHEEL_CACHE at a folder"
  fi
  path=$(dirname "$path")
done
printf '%s\n%s\n' "$wheels" "$cmake_args"
