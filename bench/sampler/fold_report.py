#!/usr/bin/env python3
"""Summarise gdrpipe_sampler's folded stacks: self and inclusive time per function.

    fold_report.py [--libdir DIR]... [--top N] [--focus TEXT] sample.<pid>.folded...

Frames without a dynamic symbol (lib+0xoff) are named with addr2line against the
first library of that name found under a --libdir (an unstripped build of the
same commit). --focus keeps only the stacks with a frame containing TEXT, and
reports their share of all samples.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

FRAME = re.compile(r'^(?P<lib>[^!+]+)(?:!(?P<sym>.+))?\+(?P<off>0x[0-9a-f]+|0)$')


def find_libs(dirs):
    found = {}
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in files:
                found.setdefault(f, os.path.join(root, f))
    return found


def strip_params(fn):
    """'ns::f(int, char*) const' -> 'ns::f'"""
    fn = re.sub(r'\s+const$', '', fn)
    if not fn.endswith(')'):
        return fn
    depth = 0
    for i in range(len(fn) - 1, -1, -1):
        depth += {')': 1, '(': -1}.get(fn[i], 0)
        if depth == 0:
            return fn[:i]
    return fn


def resolve(folded, libs):
    """frame text -> function name, addr2line for lib+off frames"""
    want = collections.defaultdict(set)
    for stack in folded:
        for fr in stack:
            m = FRAME.match(fr)
            if m and not m.group('sym') and m.group('lib') in libs:
                want[m.group('lib')].add(m.group('off'))
    names = {}
    for lib, offs in want.items():
        offs = sorted(offs)
        out = subprocess.run(['addr2line', '-f', '-C', '-e', libs[lib]] + offs,
                             capture_output=True, text=True).stdout.splitlines()
        for i, off in enumerate(offs):
            fn = out[2 * i] if 2 * i < len(out) else '??'
            names[lib + '+' + off] = lib + '!' + strip_params(fn)
    def name(fr):
        if fr in names:
            return names[fr]
        m = FRAME.match(fr)
        if m and m.group('sym'):
            return m.group('lib') + '!' + m.group('sym')
        return m.group('lib') + '!?' if m else fr
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--libdir', action='append', default=[])
    ap.add_argument('--top', type=int, default=30)
    ap.add_argument('--focus')
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    folded = collections.Counter()
    for path in a.files:
        with open(path) as f:
            for line in f:
                cnt, _, stack = line.rstrip('\n').partition(' ')
                folded[tuple(stack.split(';'))] += int(cnt)
    total = sum(folded.values())
    if total == 0:
        print('no samples')
        return 1
    name = resolve(folded, find_libs(a.libdir))
    self_t = collections.Counter()
    incl = collections.Counter()
    kept = 0
    for stack, cnt in folded.items():
        names = [name(fr) for fr in stack]
        if a.focus and not any(a.focus in n for n in names):
            continue
        kept += cnt
        self_t[names[-1]] += cnt
        for n in set(names):
            incl[n] += cnt
    print('%d samples%s' % (total, '' if not a.focus else
                             ', %d (%.1f %%) with a frame matching %r' %
                             (kept, 100.0 * kept / total, a.focus)))
    for title, ctr in (('self', self_t), ('inclusive', incl)):
        print('\n%-9s %%   function' % title)
        for n, c in ctr.most_common(a.top):
            print('%6.1f  %s' % (100.0 * c / total, n))
    return 0


if __name__ == '__main__':
    sys.exit(main())
