#!/bin/sh
# Print the CMAKE_ARGS for a portable llama-cpp-python build on this x86-64 machine.
#
# llama.cpp's default GGML_NATIVE=ON build (-march=native) crashes on CPUs with AMX (Sapphire
# Rapids and newer) in the bundled ggml; we build with GGML_NATIVE=OFF and switch on each SIMD
# extension only when /proc/cpuinfo lists it. Usage:
#     CMAKE_ARGS="$(sh scripts/cmake_args.sh)" pip install llama-cpp-python==0.3.36
# Override the whole thing by exporting EVA_CMAKE_ARGS.
set -eu

if [ -n "${EVA_CMAKE_ARGS:-}" ]; then
    printf '%s\n' "$EVA_CMAKE_ARGS"
    exit 0
fi

args="-DGGML_NATIVE=OFF"
arch=$(uname -m 2>/dev/null || echo unknown)

case "$arch" in
    x86_64|amd64|i686|i386)
        flags=""
        if [ -r /proc/cpuinfo ]; then
            flags=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2)
        fi
        has() {
            case " $flags " in
                *" $1 "*) return 0 ;;
                *) return 1 ;;
            esac
        }
        # cpuinfo flag  -> ggml option
        for pair in \
            avx:GGML_AVX avx2:GGML_AVX2 fma:GGML_FMA f16c:GGML_F16C bmi2:GGML_BMI2 \
            avx_vnni:GGML_AVX_VNNI \
            avx512f:GGML_AVX512 avx512vbmi:GGML_AVX512_VBMI avx512_vnni:GGML_AVX512_VNNI \
            avx512_bf16:GGML_AVX512_BF16; do
            flag=${pair%%:*}
            opt=${pair#*:}
            if has "$flag"; then
                args="$args -D$opt=ON"
            else
                args="$args -D$opt=OFF"
            fi
        done
        ;;
    *)
        # other architectures: a generic build, no x86 options
        ;;
esac

printf '%s\n' "$args"
