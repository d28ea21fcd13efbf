#!/bin/sh
# Builds the tuning-table parser's libFuzzer target (clang, with address and
# undefined-behaviour sanitizers) and fuzzes it for a bounded time.
#
#   fuzz/run.sh [SECONDS]        default 60
#
# Environment: CC (default clang; needs -fsanitize=fuzzer, clang >= 6),
# FUZZ_BUILD (default build-fuzz/ in the repository), FUZZ_JOBS (default 1).
# Exit status: 0 when no crash was found; libFuzzer's (non-zero) otherwise,
# with the crashing input saved in $FUZZ_BUILD as crash-*.
# The committed seeds in fuzz/corpus/table/ are read, never written: new
# inputs go to $FUZZ_BUILD/corpus.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
cc=${CC:-clang}
out=${FUZZ_BUILD:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-1}
mkdir -p "$out/corpus"

# The parser with the few core pieces it needs (errors, logging, names).
"$cc" -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" -I"$root/src" -I"$root/autotune" \
    "$root/fuzz/table_fuzz.c" \
    "$root/autotune/table_parse.c" "$root/autotune/table_lookup.c" "$root/autotune/problem_key.c" \
    "$root/src/error.c" "$root/src/log.c" "$root/src/dtype.c" "$root/src/version.c" \
    -lm -lpthread -o "$out/table_fuzz"

cd "$out"
exec ./table_fuzz -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -jobs="$jobs" -workers="$jobs" -print_final_stats=1 -dict="$root/fuzz/table.dict" \
    corpus "$root/fuzz/corpus/table"
