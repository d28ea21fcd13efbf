#!/usr/bin/env python3
"""A change timed against its base on a CPU, in one sitting: runs two
tessera-bench builds in turn (base first in even rounds, new first in odd
ones), each with --summary and the same arguments, and prints per case the
median of each build's rate and of its ratio to the vendor measured in the
same process. A noisy VM moves both builds alike within a round; their
order alternates so that neither always runs after the other.

    scripts/ab_cpu.py BASE_BENCH NEW_BENCH ROUNDS [tessera-bench args...]

GEMM summaries (--op gemm): tessera's GFLOP/s and its ratio to oneDNN.
Conv summaries (--op conv): per call and packed once, and both ratios to
oneDNN with its weights prepacked.
Row-op summaries (--op rowwise): GB/s, % of memcpy in the same process, and
the ratio to oneDNN's primitive.
Attention summaries (--op attention): the fused kernel's rate, the unfused
path's and their ratio, measured in the same process.
"""
import collections
import re
import statistics
import subprocess
import sys


def gemm_row(f):
    """shape -> (rate, ratio to oneDNN), from a GEMM summary line: shape,
    tessera's rate, k vendors' rates, k ratios, % peak and % ukr, so the
    first vendor's ratio (oneDNN's unless --impl leaves it out) is at 2 + k."""
    if len(f) < 6 or len(f) % 2 or not re.match(r'^(f32|bf16|i8)/', f[0]) or f[1] == '-':
        return None
    r = f[2 + (len(f) - 4) // 2]
    return f[0], (float(f[1]), float(r.rstrip('x')) if r != '-' else float('nan'))


def conv_row(f):
    """case -> (per call, packed, per call / any, packed / any), from a conv summary line."""
    if len(f) < 9 or f[0] not in ('f32', 'bf16') or f[1].startswith('n'):
        return None
    try:
        return f'{f[0]} {f[1]}', (float(f[2]), float(f[3]), float(f[7].rstrip('x')), float(f[8].rstrip('x')))
    except ValueError:
        return None


def rowwise_row(f):
    """case -> (GB/s, % of memcpy, ratio to oneDNN), from a row-op summary line."""
    if len(f) < 6 or not re.match(r'^[a-z_]+/(f32|bf16)/rows/', f[0]):
        return None
    nan = float('nan')
    return f[0], (float(f[1]), float(f[3].rstrip('%')), float(f[5].rstrip('x')) if f[5] != '-' else nan)


def attention_row(f):
    """case -> (tessera, unfused, ratio), from an attention summary line."""
    if len(f) != 4 or not re.match(r'^(f32|bf16)/', f[0]) or not f[3].endswith('x'):
        return None
    try:
        return f[0], (float(f[1]), float(f[2]), float(f[3].rstrip('x')))
    except ValueError:
        return None


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    base, new, rounds, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    conv, rows, attn = 'conv' in args, 'rowwise' in args, 'attention' in args
    parse = conv_row if conv else rowwise_row if rows else attention_row if attn else gemm_row
    res = collections.defaultdict(lambda: {'base': [], 'new': []})
    for r in range(rounds):
        for name in (('base', 'new') if r % 2 == 0 else ('new', 'base')):
            out = subprocess.run([base if name == 'base' else new, '--summary'] + args,
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                row = parse(line.split())
                if row:
                    res[row[0]][name].append(row[1])
    cols = (['call', 'packed', 'call/any', 'pk/any'] if conv else ['GB/s', '% copy', 'vs dnn'] if rows else
            ['fused', 'unfused', 'ratio'] if attn else ['rate', 'vs dnn'])
    print(f"{'case':34s} " + ' '.join(f'{c + " b":>10s} {c + " n":>10s}' for c in cols))
    for case, v in res.items():
        if not v['base'] or not v['new']:
            continue
        med = [(statistics.median(x[i] for x in v['base']), statistics.median(x[i] for x in v['new']))
               for i in range(len(cols))]
        print(f'{case:34s} ' + ' '.join(f'{b:10.2f} {n:10.2f}' for b, n in med))


if __name__ == '__main__':
    main()
