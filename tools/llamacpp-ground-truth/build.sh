#!/bin/sh
# Builds libllama (CPU only) from the llama.cpp that the llama-cpp-python sdist pins under
# vendor/llama.cpp, and startup.cpp against it. Usage: build.sh [WORKDIR]
# (default /tmp/llamacpp-ground-truth); prints the path of the startup binary last.
# -O0: the fixtures need the allocation, not speed, and the build takes a third of the time.
set -eu
PIN=0.3.36 # llama-cpp-python; its CHANGELOG: "update llama.cpp to ggml-org/llama.cpp@0c1e57098"
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${1:-/tmp/llamacpp-ground-truth}
PYTHON=${PYTHON:-python3}
mkdir -p "$WORK"
SRC="$WORK/llama_cpp_python-$PIN/vendor/llama.cpp"
if [ ! -f "$SRC/CMakeLists.txt" ]; then
    "$PYTHON" -m pip download --no-deps --no-binary :all: "llama-cpp-python==$PIN" -d "$WORK/sdist"
    tar -xzf "$WORK/sdist/llama_cpp_python-$PIN.tar.gz" -C "$WORK"
fi
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-O0 \
    -DCMAKE_CXX_FLAGS_RELEASE=-O0 \
    -DGGML_NATIVE=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF >"$WORK/cmake.log"
nice cmake --build "$WORK/build" --target llama -j "${JOBS:-2}" >"$WORK/build.log"
LIB="$WORK/build/bin"
nice g++ -std=c++17 -O0 -I "$SRC/include" -I "$SRC/ggml/include" -I "$SRC/src" "$HERE/startup.cpp" \
    -L "$LIB" -lllama -lggml -lggml-base -Wl,-rpath,"$LIB" -o "$WORK/startup"
echo "$WORK/startup"
