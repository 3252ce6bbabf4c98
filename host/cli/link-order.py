#!/usr/bin/env python3
"""Writes host/cli/link-order.txt: the functions of the `toolhost` executable
that run when it starts and serves calls, in the order the linker should put
them first (host/cli/build.rs hands the file to the linker).

The names carry hashes of the compiler and of each crate's resolved features,
which differ between the executable `cargo build --release -p toolhost-cli`
makes and the one `cargo test --release` (and `cargo bench -p toolhost-cli`)
makes, so the file has a section for each; the linker skips the names that
are not in the executable it links.

Why: the kernel maps an executable's code 64 KiB around every page touched, so
code spread over the whole 28 MB text costs its pages in every process. With
the functions that run kept together, `toolhost serve` after 40,000 calls holds
about 9 MiB of code instead of 20 (docs/benchmarks.md).

How: runs the release build under valgrind's callgrind (exact: every function
that ran, not a sample) doing what users do most: `tools`, `call`, `run` and
`serve` calling each built-in. Needs valgrind. Run after changes that rename
many functions (a dependency or Rust upgrade); a stale list only costs memory,
never correctness (names the binary no longer has are skipped).

    cargo build --release -p toolhost-cli && python3 host/cli/link-order.py --section release
    cargo test --release --no-run && python3 host/cli/link-order.py --section test
"""
import argparse, fcntl, json, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXE = os.path.join(ROOT, 'target', 'release', 'toolhost')  # or --binary
OUT = os.path.join(ROOT, 'host', 'cli', 'link-order.txt')


def workspace(base):
    ws = os.path.join(base, 'ws')
    os.makedirs(ws + '/src')
    for k in range(5):
        with open(f'{ws}/src/f{k}.rs', 'w') as f:
            f.write(''.join(f'fn f{k}_{j}() {{ println!("{j}"); }}\n' for j in range(50)))
    with open(ws + '/small.txt', 'w') as f:
        f.write('hello\nworld\n' * 20)
    os.makedirs(ws + '/.toolhost')
    with open(ws + '/.toolhost/settings.json', 'w') as f:
        json.dump({'permissions': {'allow': ['Bash', 'Write', 'Edit', 'Read', 'NotebookEdit']}}, f)
    subprocess.run([EXE, 'trust'], cwd=ws, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return ws


def calls(ws, rep):
    """The calls each scenario makes, as (name, input)."""
    return [
        ('Read', {'file_path': ws + '/small.txt'}),
        ('Read', {'file_path': ws + '/src/f1.rs', 'offset': 3, 'limit': 5}),
        ('Write', {'file_path': ws + f'/new{rep}.txt', 'content': 'one\ntwo\n'}),
        ('Read', {'file_path': ws + f'/new{rep}.txt'}),
        ('Edit', {'file_path': ws + f'/new{rep}.txt', 'old_string': 'two', 'new_string': 'three'}),
        ('Glob', {'pattern': '**/*.rs'}),
        ('Grep', {'pattern': 'println', 'path': ws}),
        ('Grep', {'pattern': 'f1_\\d+', 'output_mode': 'content', '-n': True}),
        ('Bash', {'command': 'echo hi && ls src | wc -l'}),
        ('Read', {'file_path': ws + '/missing.txt'}),
    ]


def grind(out, args, ws, stdin=None):
    """Runs toolhost ARGS under callgrind; returns the Popen when stdin is a pipe."""
    cmd = ['valgrind', '--tool=callgrind', '--demangle=no', f'--callgrind-out-file={out}', EXE] + args
    if stdin is subprocess.PIPE:
        return subprocess.Popen(cmd, cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    subprocess.run(cmd, cwd=ws, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=ENV)


def serve(out, ws):
    # Valgrind does not know the Landlock system calls, so Bash runs unconfined under it.
    p = grind(out, ['serve', '--child-confinement', 'best-effort'], ws, subprocess.PIPE)

    def send(m):
        p.stdin.write((json.dumps(m) + '\n').encode())
        p.stdin.flush()

    def recv():
        while True:
            m = json.loads(p.stdout.readline())
            if 'id' in m:
                return m

    send({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {
        'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'order', 'version': '1'}}})
    recv()
    send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
    send({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list', 'params': {}})
    recv()
    k = 10
    for rep in range(3):
        for name, args in calls(ws, rep):
            k += 1
            send({'jsonrpc': '2.0', 'id': k, 'method': 'tools/call', 'params': {'name': name, 'arguments': args}})
            recv()
    p.stdin.close()
    p.wait()


def functions(path, seen, names):
    """Adds the executable's functions that ran, per a callgrind output, in first-seen order."""
    objects, fns, current = {}, {}, None
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        m = re.match(r'^(c?ob)=\((\d+)\)(?: (.*))?$', line)
        if m:
            if m[3] is not None:
                objects[m[2]] = m[3]
            if m[1] == 'ob':
                current = objects[m[2]]
            continue
        m = re.match(r'^(c?fn)=\((\d+)\)(?: (.*))?$', line)
        if m:
            if m[3] is not None:
                fns[m[2]] = m[3]
            if m[1] == 'fn' and current == EXE:
                name = re.sub(r"'\d+$", '', fns[m[2]])  # callgrind's recursion marks
                if name not in seen:
                    seen.add(name)
                    names.append(name)


def main():
    global EXE
    parser = argparse.ArgumentParser(description='Writes one section of host/cli/link-order.txt.')
    parser.add_argument('--section', required=True, help='release (cargo build --release) or test (cargo test --release)')
    parser.add_argument('--binary', default=EXE, help='the toolhost executable to run (default: target/release/toolhost)')
    args = parser.parse_args()
    EXE = os.path.abspath(args.binary)
    if not shutil.which('valgrind'):
        sys.exit('link-order.py needs valgrind (apt install valgrind)')
    symbols = subprocess.run(['nm', '--defined-only', EXE], capture_output=True, text=True, check=True).stdout
    code = {p[2] for p in (l.split() for l in symbols.splitlines()) if len(p) == 3 and p[1] in 'tTwW'}
    base = tempfile.mkdtemp()
    global ENV
    ENV = dict(os.environ, HOME=base, TOOLHOST_DATA_DIR=base + '/data', TOOLHOST_CACHE_DIR=base + '/cache')
    try:
        ws = workspace(base)
        subprocess.run([EXE, 'tools'], cwd=ws, check=True, stdout=subprocess.DEVNULL, env=ENV)  # fills the cache
        seen, names = set(), []
        run_lines = ''.join(json.dumps({'type': 'tool_use', 'id': f'toolu_{i}', 'name': n, 'input': a}) + '\n'
                            for i, (n, a) in enumerate(calls(ws, 9)) if n in ('Read', 'Glob', 'Grep'))
        for label, go in [
            ('serve', lambda out: serve(out, ws)),
            ('call', lambda out: grind(out, ['call', 'Read', json.dumps({'file_path': ws + '/small.txt'})], ws)),
            ('run', lambda out: grind(out, ['run'], ws, run_lines.encode())),
            ('tools', lambda out: grind(out, ['tools'], ws)),
        ]:
            out = os.path.join(base, f'callgrind.{label}')
            go(out)
            before = len(names)
            functions(out, seen, names)
            print(f'{label}: {len(names) - before} more functions', file=sys.stderr)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    kept = [n for n in names if n in code]
    rustc = subprocess.run(['rustc', '--version'], capture_output=True, text=True, check=True).stdout.strip()
    write_section(args.section, f'# {rustc}: section {args.section}, written by host/cli/link-order.py\n', kept)
    print(f'{OUT}: {len(kept)} functions in section {args.section}', file=sys.stderr)


def write_section(section, header, names):
    """Replaces SECTION of the file (a header line starting `# rustc`, then its
    names) with HEADER and NAMES, keeping the other sections."""
    with open(OUT, 'a+') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        sections, current = {}, None
        for line in f.read().splitlines():
            if line.startswith('# rustc'):
                current = line.split('section ', 1)[1].split(',', 1)[0] if 'section ' in line else 'release'
                sections[current] = [line + '\n']
            elif current is not None and line:
                sections[current].append(line + '\n')
        sections[section] = [header] + [n + '\n' for n in names]
        f.seek(0)
        f.truncate()
        # The linker's order is the file's: the first section's names come first.
        f.write(''.join(''.join(sections[k]) for k in sorted(sections)))


if __name__ == '__main__':
    main()
