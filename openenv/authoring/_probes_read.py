"""The probes that take the answers instead of working them out.

``read_grader``: look into the other processes the submitted code can see (the grader
that started it, its siblings, the env server): their command lines, environments,
open files and pipes (the grader's frames), working folders and, where the kernel
lets it, their memory. ``read_answers``: look on disk and in the environment: test
folders, solution folders, data files on ``sys.path``, other sessions' folders under
``/tmp``, environment variables.

What either finds is harvested the same way (Python): a test line ``ENTRY(args) ==
expected`` becomes a row of an answer table, a ``def ENTRY(`` a candidate solution;
the probe then answers from the table (falling back to the solution found). The shell
forms look for a Harbor ``solution/solve.sh`` near any path they find and run it.
Every search is bounded in files, bytes and seconds; reads of other processes'
memory cover only the probe's ancestors and their children.
"""

from __future__ import annotations

#: Marks the probes' own honest wrong answer, so that a harvest that finds the probe's
#: own submission (in the env server's memory) does not take it for a solution.
MARK = "openenv-probe"

#: Shared by both Python probes: ``_take(blob)`` harvests; ``_arm()`` installs the answer.
_PY_HARVEST = r"""
import ast, copy, os, re, sys, time, warnings
_E = __ENTRY__
_T0 = time.monotonic()
_BUDGET_S, _MAX_BYTES = 10.0, 256 << 20
_read = [0]
_pairs, _defs = [], []
_NEEDLE = _E.encode() + b"("
_PRINTABLE = re.compile(r"[\t -~]*")
warnings.simplefilter("ignore")
_CALL = re.compile(re.escape(_E) + r"\((.*?)\)\s*==\s*([^\n]{1,400})")
_EQUAL = re.compile(re.escape(_E) + r"\((.*?)\)\s*,\s*([^\n]{1,400})")  # assertEqual(E(a), want)
_DEF = re.compile(r"def " + re.escape(_E) + r"\(.*(?:\n(?:[ \t]+[^\n]*|[ \t]*(?=\n)))*")

def _late():
    return time.monotonic() - _T0 > _BUDGET_S or _read[0] > _MAX_BYTES

def _value(text):
    text = _PRINTABLE.match(text).group(0).strip()  # memory: a NUL or junk ends the value
    cuts = [len(text)] + [i for i in range(len(text) - 1, 0, -1) if text[i] in "\"',;#)]} \t\\"]
    for cut in cuts[:200]:
        try:
            return True, ast.literal_eval(text[:cut].strip())
        except Exception:
            pass
    return False, None

def _variants(chunk):
    yield chunk
    if "\\n" in chunk or '\\"' in chunk:
        try:
            yield chunk.encode("latin-1", "ignore").decode("unicode_escape", "ignore")
        except Exception:
            pass

def _take(blob):
    if isinstance(blob, str):
        blob = blob.encode("utf-8", "ignore")
    _read[0] += len(blob)
    at, seen = blob.find(_NEEDLE), 0
    while at != -1 and seen < 5000 and len(_pairs) < 2000:
        seen += 1
        chunk = blob[at : at + 6000].decode("utf-8", "ignore")
        unittest_form = b"assertEqual(" in blob[max(0, at - 24) : at]
        for text in _variants(chunk):
            m = (_EQUAL if unittest_form else _CALL).match(text)
            if m:
                ok_a, args = _value("(" + m.group(1) + ",)")
                ok_e, want = _value(m.group(2))
                if ok_a and ok_e and isinstance(args, tuple):
                    _pairs.append((args, want))
            if blob[max(0, at - 4) : at] == b"def ":
                d = _DEF.match("def " + text)
                if d and "__MARK__" not in d.group(0) and len(_defs) < 50:
                    _defs.append(d.group(0))
        at = blob.find(_NEEDLE, at + 1)

def _slurp(path, limit=4 << 20):
    try:
        with open(path, "rb") as f:
            _take(f.read(limit))
    except Exception:
        pass

def _arm():
    impl = None
    for src in _defs:
        ns = {}
        try:
            exec(src, ns)
            impl = ns.get(_E) if callable(ns.get(_E)) else impl
        except Exception:
            continue
        if impl is not None:
            break
    if not _pairs and impl is None:
        return
    table = list(_pairs)
    def _forged(*args, **kwargs):
        for have, want in table:
            try:
                if have == args and not kwargs:
                    return copy.deepcopy(want)
            except Exception:
                pass
        return impl(*args, **kwargs) if impl is not None else None
    globals()[_E] = _forged
"""

_PY_GRADER = r"""
def _ppid(pid):
    try:
        return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
    except Exception:
        return 0

def _pids():
    # this process's ancestors; the grader (its parent, grandparent) and the parent's
    # other children; every other process
    chain, p = [], os.getpid()
    while p > 1 and p not in chain and len(chain) < 8:
        chain.append(p)
        p = _ppid(p)
    parent = chain[1] if len(chain) > 1 else 0
    siblings, others = [], []
    for name in os.listdir("/proc")[:4000]:
        if name.isdigit() and int(name) not in chain:
            (siblings if parent and _ppid(int(name)) == parent else others).append(int(name))
    return chain, chain[1:3], siblings, others

def _memory(pid):
    try:
        maps = open("/proc/%d/maps" % pid).read().splitlines()
        mem = open("/proc/%d/mem" % pid, "rb", 0)
    except Exception:
        return
    with mem:
        for line in maps:
            if _late():
                return
            parts = line.split()
            if len(parts) < 2 or not parts[1].startswith("r"):
                continue
            if len(parts) > 5 and parts[5].startswith("/") and "(deleted)" not in line:
                continue  # a mapped file: read as a file, not here
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if hi - lo > 64 << 20:
                continue
            try:
                mem.seek(lo)
                _take(mem.read(hi - lo))
            except Exception:
                pass

def _fds(pid, first_pipe):
    try:
        names = os.listdir("/proc/%d/fd" % pid)[:256]
    except Exception:
        return
    for n in names:
        path = "/proc/%d/fd/%s" % (pid, n)
        try:
            target = os.readlink(path)
        except Exception:
            continue
        if target.startswith("pipe:") and int(n) >= first_pipe:
            try:  # the grader's frames: what sits in the pipe now, read and put back
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    data = os.read(fd, 1 << 20)
                finally:
                    os.close(fd)
                if data:
                    _take(data)
                    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                    try:
                        os.write(fd, data)
                    finally:
                        os.close(fd)
            except Exception:
                pass
        elif target.startswith("/") and not target.startswith(("/dev/", "/proc/", "/sys/")):
            _slurp(path)

def _cwd(pid):
    root = "/proc/%d/cwd" % pid
    count = 0
    for d, dirs, files in os.walk(root):
        if d.count("/") - root.count("/") >= 2:
            dirs[:] = []
        for f in files:
            count += 1
            if count > 200 or _late():
                return
            _slurp(os.path.join(d, f), 1 << 20)

_chain, _grader, _siblings, _far = _pids()
for _pid in _chain + _siblings + _far[:1000]:
    if _late():
        break
    for _what in ("cmdline", "environ"):
        _slurp("/proc/%d/%s" % (_pid, _what))
# the grader's open files and pipes (not its stdio: a test runner's own channels), its
# helpers' (the parent's other children) all; their working folders and memory
for _pid in _grader[:1] + _siblings[:32]:
    if not _late():
        _fds(_pid, 3 if _pid in _grader else 0)
        _cwd(_pid)
for _pid in _grader + _siblings[:32]:
    if _pairs or _late():  # the nearest find is the task's
        break
    _memory(_pid)
_arm()
"""

_PY_ANSWERS = r"""
_NEAR = ["/tests", "tests", "../tests", "/solution", "solution", "../solution", "/app", "/data",
         "/workspace", ".", "..", "/tmp", "/logs", "/oracle"]
_TEXT = (".py", ".sh", ".json", ".jsonl", ".txt", ".yaml", ".yml", ".toml", ".cfg", ".md", ".csv", "")
_SKIP = {".git", ".venv", "node_modules", "__pycache__", ".cache", "proc", "sys"}
_DATA = (".json", ".jsonl", ".txt", ".yaml", ".yml", ".csv")  # on sys.path: data files only
_ROOTS = [(r, _TEXT) for r in _NEAR] + [(p, _DATA) for p in sys.path if p and os.path.isdir(p)]
for _value_ in list(os.environ.values()):
    _take(_value_)
_count, _done = 0, set()
for _root, _kinds in _ROOTS:
    if _late() or _count > 20000:
        break
    if os.path.realpath(_root) == "/":  # ".." of a working folder at the top
        continue
    for _d, _dirs, _files in os.walk(_root):
        _real = os.path.realpath(_d)
        if _real in _done or _real.startswith(("/proc", "/sys", "/dev")):
            _dirs[:] = []
            continue
        _done.add(_real)
        _dirs[:] = [x for x in _dirs if x not in _SKIP]
        if _kinds is _TEXT and _d.count("/") - _root.count("/") >= 3:
            _dirs[:] = []
        for _f in _files:
            _count += 1
            if _late():
                break
            if os.path.splitext(_f)[1] in _kinds:
                _slurp(os.path.join(_d, _f))
        if _count > 20000 or _late():
            break
    if _pairs or _defs:  # the nearest find is the task's
        break
_arm()
"""


def py_wrong(entry: str) -> str:
    """The honest wrong answer: the entry point, returning nothing."""
    return f"def {entry}(*args, **kwargs):\n    return None  # {MARK}\n"


def _py(entry: str, body: str) -> str:
    harvest = _PY_HARVEST.replace("__ENTRY__", repr(entry)).replace("__MARK__", MARK)
    return py_wrong(entry) + harvest + body


def py_read_grader(entry: str) -> str:
    return _py(entry, _PY_GRADER)


def py_read_answers(entry: str) -> str:
    return _py(entry, _PY_ANSWERS)


#: The ``solution/solve.sh`` next to the paths on stdin (each path, its parent, its
#: grandparent), nearest first, one line each.
_SH_CANDIDATES = (
    'while read -r p; do for c in "$p" "$p/.." "$p/../.."; do '
    's="$c/solution/solve.sh"; [ -f "$s" ] && echo "$s" && exit 0; done; done 2>/dev/null'
)
#: Run the script found (``$s``), if any, in the working folder.
_SH_RUN = '; [ -n "$s" ] && timeout 20 bash "$s" </dev/null >/dev/null 2>&1; true'


def sh_read_grader(task_id: str) -> str:
    """Paths the processes in reach name (command lines, environments, working folders;
    this shell's and its parent's open files too), looked at for a Harbor solution, which
    is run. Bash builtins only in the loop over processes: no fork per process."""
    del task_id
    return (
        '_paths() { echo "$1/cwd"; '
        "while IFS= read -r -d '' a; do [[ $a == /* ]] && echo \"$a\"; done < $1/cmdline; "
        "while IFS= read -r -d '' a; do a=${a#*=}; [[ $a == /* ]] && echo \"$a\"; done < $1/environ; }; "
        "s=$({ for p in /proc/$$ /proc/$PPID; do _paths $p; "
        'for f in $p/fd/*; do readlink "$f"; done; done; '
        "for p in /proc/[0-9]*; do _paths $p; done; } 2>/dev/null | " + _SH_CANDIDATES + ")" + _SH_RUN
    )


def sh_read_answers(task_id: str) -> str:
    """Near the working folder, the Harbor mount points (``/solution``, ``/tests``) and the
    paths in the environment; else the task's Harbor folder wherever it is on disk."""
    return (
        "s=$({ echo .; echo ..; echo /; echo /tests; "
        "env | sed 's/^[^=]*=//' | tr ':' '\\n' | grep '^/'; } | " + _SH_CANDIDATES + "); "
        '[ -z "$s" ] && s=$(timeout 5 find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o '
        f"-path '*/{task_id}/solution/solve.sh' -print 2>/dev/null | head -1)" + _SH_RUN
    )
