"""The jit's kernel cache loads nothing another user could have written, survives damaged files,
stays bounded and thread-safe, and shrugs off bad settings (docs/jit.md, "Trust model").

Hostile cases run in child processes (a planted library may have a constructor; a truncated one
used to kill the process), each with its own HOME and cache folder and a timeout."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend.fusion import _cache, _fuse

needs_cc = pytest.mark.skipif(not _fuse.compiler_available(), reason="no C compiler")
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="simulating another user's folder needs chown")

# the child's workload: a fused chain (one kernel) checked against NumPy; prints the jit counters
CHILD = textwrap.dedent("""
    import os, sys, warnings
    warnings.simplefilter("always")
    import numpy as np
    import runetensor as rt
    x = rt.asarray(np.linspace(-2, 2, 64))
    f = rt.jit(lambda a: rt.sin(a) * 3.0 + a * a)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = f(x)
        r = f(x)
    xn = np.linspace(-2, 2, 64)
    assert np.allclose(np.asarray(r), np.sin(xn) * 3.0 + xn * xn, rtol=1e-12, atol=1e-12), r
    for m in w:
        print("WARNING:", m.message)
    print("COMPILES", rt.jit_stats(f)["compiles"])
""")


def _env(tmp_path, cache) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNETENSOR_") and k != "XDG_CACHE_HOME"}
    env["HOME"] = str(home)
    if cache is not None:
        env["RUNETENSOR_JIT_CACHE"] = str(cache)
    return env


def _child(tmp_path, cache, code: str = CHILD, umask: int | None = None, extra: dict | None = None):
    env = _env(tmp_path, cache)
    env.update(extra or {})
    pre = (lambda: os.umask(umask)) if umask is not None else None
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240,
                       preexec_fn=pre)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])
    return r.stdout


def _kernel_names(tmp_path) -> list:
    """The library names the child's workload compiles (compiled once into a private folder)."""
    ref = tmp_path / "reference"
    ref.mkdir(mode=0o700)
    out = _child(tmp_path, ref)
    assert "COMPILES 1" in out, out
    names = sorted(n for n in os.listdir(ref) if n.startswith("k") and n.endswith(".so"))
    assert names
    return names


def _evil(tmp_path, marker, sealed: bool = True, entry: bool = True) -> bytes:
    """A library whose constructor writes ``marker`` (sealed as the cache seals its libraries, so
    only the folder checks can stop it)."""
    src = tmp_path / "evil.c"
    body = ('#include <stdio.h>\n#include <stdint.h>\n'
            f'__attribute__((constructor)) static void planted(void) {{ FILE *f = fopen("{marker}", "w");'
            ' if (f) { fputs("ran", f); fclose(f); } }\n')
    if entry:
        body += "void kernel(void) {}\nvoid kernel_v(const int64_t *A) { (void)A; }\n"
    src.write_text(body)
    so = tmp_path / "evil.so"
    subprocess.run([shutil.which("cc") or "cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True, timeout=120)
    data = so.read_bytes()
    return _cache.seal(data) if sealed else data


def _sealed_without_entry(tmp_path) -> bytes:
    src = tmp_path / "noentry.c"
    src.write_text("int something_else(int x) { return x + 1; }\n")
    so = tmp_path / "noentry.so"
    subprocess.run([shutil.which("cc") or "cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True, timeout=120)
    return _cache.seal(so.read_bytes())


# ------------------------------------------------------------------------------------ trust


@needs_cc
@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_planted_library_in_folder_others_can_write_is_not_loaded(tmp_path, mode):
    names = _kernel_names(tmp_path)
    marker = tmp_path / "marker"
    shared = tmp_path / "shared"
    shared.mkdir()
    evil = _evil(tmp_path, marker)
    for n in names:
        (shared / n).write_bytes(evil)
    os.chmod(shared, mode)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(mode=0o700)
    out = _child(tmp_path, shared, extra={"TMPDIR": str(tmpdir)})
    assert not marker.exists(), "a planted library's constructor ran"
    assert "not using the kernel cache folder" in out and "others can write" in out
    assert out.count("not using the kernel cache folder") == 1
    assert "COMPILES 1" in out  # compiled into a private folder instead
    assert os.listdir(tmpdir) == []  # which is removed at exit
    assert sorted(os.listdir(shared)) == names  # and the shared folder was not written to


@needs_cc
@needs_root
@pytest.mark.parametrize("parent", ["foreign", "group_writable"])
def test_cache_under_a_parent_others_control_is_refused(tmp_path, parent):
    names = _kernel_names(tmp_path)
    marker = tmp_path / "marker"
    top = tmp_path / "top"
    cache = top / "cache"
    cache.mkdir(parents=True, mode=0o700)
    for n in names:
        (cache / n).write_bytes(_evil(tmp_path, marker))
    if parent == "foreign":
        os.chown(top, 65534, 65534)
        os.chmod(top, 0o755)
    else:
        os.chmod(top, 0o775)
    out = _child(tmp_path, cache)
    assert not marker.exists()
    assert "not using the kernel cache folder" in out and "its parent" in out, out
    assert "COMPILES 1" in out


@needs_cc
@needs_root
def test_folder_of_another_user_is_refused(tmp_path):
    names = _kernel_names(tmp_path)
    marker = tmp_path / "marker"
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o755)
    evil = _evil(tmp_path, marker)
    for n in names:
        (foreign / n).write_bytes(evil)
        os.chown(foreign / n, 65534, 65534)
    os.chown(foreign, 65534, 65534)
    os.chmod(foreign, 0o755)
    out = _child(tmp_path, foreign)
    assert not marker.exists(), "a library in another user's folder was loaded"
    assert "belongs to uid 65534" in out
    assert "COMPILES 1" in out


@needs_cc
@needs_root
def test_library_of_another_user_in_own_folder_is_not_loaded(tmp_path):
    names = _kernel_names(tmp_path)
    marker = tmp_path / "marker"
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    evil = _evil(tmp_path, marker)
    for n in names:
        (mine / n).write_bytes(evil)
        os.chown(mine / n, 65534, 65534)
    out = _child(tmp_path, mine)
    assert not marker.exists()
    assert "COMPILES 1" in out and "WARNING" not in out
    for n in names:  # replaced by this user's own sealed library
        st = os.lstat(mine / n)
        assert st.st_uid == os.geteuid() and _cache.sealed_ok((mine / n).read_bytes())


@needs_cc
def test_symlinked_kernel_is_not_followed(tmp_path):
    names = _kernel_names(tmp_path)
    marker = tmp_path / "marker"
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    evil = _evil(tmp_path, marker)
    for n in names:
        (elsewhere / n).write_bytes(evil)
        os.symlink(elsewhere / n, private / n)
    out = _child(tmp_path, private)
    assert not marker.exists(), "the loader followed a symbolic link"
    assert "COMPILES 1" in out
    for n in names:
        assert not os.path.islink(private / n)
        assert (elsewhere / n).read_bytes() == evil  # the link's target was not written through


@needs_cc
def test_symlinked_cache_folder_to_a_shared_folder_is_refused(tmp_path):
    names = _kernel_names(tmp_path)
    marker = tmp_path / "marker"
    shared = tmp_path / "shared"
    shared.mkdir()
    for n in names:
        (shared / n).write_bytes(_evil(tmp_path, marker))
    os.chmod(shared, 0o1777)
    link = tmp_path / "link"
    os.symlink(shared, link)
    out = _child(tmp_path, link)
    assert not marker.exists()
    assert "not using the kernel cache folder" in out


@needs_cc
@pytest.mark.parametrize("where", ["default", "nested"])
def test_umask_zero_still_gives_a_private_cache(tmp_path, where):
    home = tmp_path / "home"
    home.mkdir()
    if where == "default":
        made = [home / ".cache", home / ".cache" / "runetensor", home / ".cache" / "runetensor" / "jit"]
        out = _child(tmp_path, None, umask=0)
    else:
        made = [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "cache"]
        out = _child(tmp_path, made[-1], umask=0)
    assert "COMPILES 1" in out and "WARNING" not in out
    for d in made:
        assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700, d
    files = os.listdir(made[-1])
    assert files and all(n.startswith("k") and n.endswith(".so") for n in files), files  # no leftovers
    for n in files:
        assert stat.S_IMODE(os.lstat(made[-1] / n).st_mode) in (0o600, 0o700), n
    # and a second process loads them (no recompile)
    out = _child(tmp_path, None if where == "default" else made[-1], umask=0)
    assert "COMPILES 1" in out


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "no_entry_point", "unsealed", "flipped_byte"])
def test_damaged_library_is_compiled_again(tmp_path, damage):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    out = _child(tmp_path, cache)
    names = sorted(n for n in os.listdir(cache) if n.endswith(".so"))
    assert names
    for n in names:
        p = cache / n
        data = p.read_bytes()
        assert _cache.sealed_ok(data)
        if damage == "truncated":
            new = data[:len(data) // 3]
        elif damage == "empty":
            new = b""
        elif damage == "garbage":
            new = os.urandom(len(data))
        elif damage == "no_entry_point":
            new = _sealed_without_entry(tmp_path)
        elif damage == "unsealed":
            new = data[:-len(_cache.MAGIC) - 32]  # a valid library, no seal
        else:
            b = bytearray(data)
            b[len(b) // 2] ^= 0xFF
            new = bytes(b)
        p.write_bytes(new)
        os.chmod(p, 0o600)
    out = _child(tmp_path, cache)
    assert "COMPILES 1" in out and "WARNING" not in out, out
    for n in names:
        assert _cache.sealed_ok((cache / n).read_bytes())


def test_sealed_ok_rejects_damage():
    body = b"\x7fELF" + bytes(range(256)) * 4
    good = _cache.seal(body)
    assert _cache.sealed_ok(good)
    assert not _cache.sealed_ok(good[:-1])
    assert not _cache.sealed_ok(body)
    assert not _cache.sealed_ok(good[:100] + b"x" + good[101:])
    assert not _cache.sealed_ok(_cache.seal(b"MZ" + body))


# ------------------------------------------------------------------------------ settings

SETTINGS_CHILD = textwrap.dedent("""
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        import numpy as np
        import runetensor as rt
        import runetensor._jit as J
        from runetensor._backend.fusion import _fuse
        x = rt.asarray(np.arange(8.0))
        for c in (2.0, 3.0):
            f = rt.jit(lambda a, c=c: a * c + 1)
            for _ in range(2):
                r = f(x)
            assert np.array_equal(np.asarray(r), np.arange(8.0) * c + 1)
        print("LIMIT", _fuse.disk_cache_limit())
    print("MAX_PROGRAMS", J.MAX_PROGRAMS)
    for m in w:
        print("WARNING:", m.message)
""")


@pytest.mark.parametrize("var,bad", [("RUNETENSOR_JIT_MAX_PROGRAMS", "abc"), ("RUNETENSOR_JIT_MAX_PROGRAMS", "0"),
                                     ("RUNETENSOR_JIT_MAX_PROGRAMS", "-3"), ("RUNETENSOR_JIT_MAX_PROGRAMS", "2.5"),
                                     ("RUNETENSOR_JIT_CACHE_MAX_MB", "inf"), ("RUNETENSOR_JIT_CACHE_MAX_MB", "nan"),
                                     ("RUNETENSOR_JIT_CACHE_MAX_MB", "-1"), ("RUNETENSOR_JIT_CACHE_MAX_MB", "1e400"),
                                     ("RUNETENSOR_JIT_CACHE_MAX_MB", "lots")])
def test_bad_setting_warns_once_and_keeps_the_default(tmp_path, var, bad):
    cache = tmp_path / "cache"
    out = _child(tmp_path, cache, SETTINGS_CHILD, extra={var: bad})
    assert "MAX_PROGRAMS 64" in out and "LIMIT 256000000" in out, out
    warned = [ln for ln in out.splitlines() if ln.startswith("WARNING:") and var in ln]
    if var.endswith("MAX_MB") and not _fuse.compiler_available():
        assert len(warned) <= 1
    else:
        assert len(warned) == 1, out
        assert repr(bad) in warned[0] and "default" in warned[0]


@pytest.mark.parametrize("var,good,attr,want", [("RUNETENSOR_JIT_MAX_PROGRAMS", " 7 ", "MAX_PROGRAMS", "7"),
                                                ("RUNETENSOR_JIT_CACHE_MAX_MB", "1.5", "LIMIT", "1500000")])
def test_good_setting_is_used_without_warning(tmp_path, var, good, attr, want):
    out = _child(tmp_path, tmp_path / "cache", SETTINGS_CHILD, extra={var: good})
    assert f"{attr} {want}" in out, out
    assert not [ln for ln in out.splitlines() if ln.startswith("WARNING:") and var in ln], out


# ------------------------------------------------------------------------- bounded, threads

BOUND_CHILD = textwrap.dedent("""
    import gc, os
    import numpy as np
    import runetensor as rt
    from runetensor._backend.fusion import _cache
    _cache.MEMORY_KERNELS = 3
    folder = os.path.realpath(os.environ["RUNETENSOR_JIT_CACHE"])

    def loaded():
        with open("/proc/self/maps") as fh:
            return {ln.split(None, 5)[5].strip() for ln in fh if len(ln.split(None, 5)) == 6
                    and ln.split(None, 5)[5].startswith(folder)}

    x = rt.asarray(np.linspace(0, 1, 32))
    f = rt.jit(lambda a, c: rt.exp(a) * c + a)
    peak = 0
    for i in range(16):
        c = 1.0 + i / 8
        r = f(x, c)
        assert np.allclose(np.asarray(r), np.exp(np.linspace(0, 1, 32)) * c + np.linspace(0, 1, 32)), i
        gc.collect()
        peak = max(peak, len(loaded()))
    st = rt.jit_stats(f)
    print("TRACES", st["traces"], "PEAK", peak, "NOW", len(loaded()), "CACHED", st["cache_size"])
""")


@needs_cc
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="counts mapped libraries in /proc/self/maps")
def test_loaded_libraries_stay_bounded_across_retraces(tmp_path):
    cache = tmp_path / "cache"
    out = _child(tmp_path, cache, BOUND_CHILD, extra={"RUNETENSOR_JIT_MAX_PROGRAMS": "2"})
    words = out.split()
    traces, peak, now, cached = (int(words[words.index(k) + 1]) for k in ("TRACES", "PEAK", "NOW", "CACHED"))
    assert traces == 16 and cached == 2
    # kept: 3 in the memory cache plus those of the 2 cached programs (one kernel each)
    assert 1 <= now <= 5 and peak <= 5, out


@pytest.mark.filterwarnings("ignore:.*has now been traced")
@pytest.mark.parametrize("static", [False, True])
def test_threads_calling_while_programs_are_evicted(monkeypatch, static):
    import runetensor._jit as J
    monkeypatch.setattr(J, "MAX_PROGRAMS", 2)
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", "0")  # replay only: the race is in the program cache
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors: list = []
    wrong: list = []
    if static:
        f = rt.jit(lambda a, k: a * k + 1, static_argnums=1)
    else:
        f = rt.jit(lambda a: a * 2 + 1)
    xs = [rt.asarray(np.arange(float(n))) for n in range(1, 7)]

    def work(t):
        try:
            for i in range(150):
                j = (i + t) % len(xs)
                if static:
                    r, want = f(xs[0], j), np.arange(1.0) * j + 1
                else:
                    r, want = f(xs[j]), np.arange(float(j + 1)) * 2 + 1
                if not np.array_equal(np.asarray(r), want):
                    wrong.append((t, i))
        except BaseException as e:  # noqa: BLE001 - any exception is the failure being tested
            errors.append(repr(e))

    try:
        ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=300)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    assert not wrong
    st = rt.jit_stats(f)
    assert st["cache_size"] <= 2 and st["evictions"] > 0


UNLOAD_CHILD = textwrap.dedent("""
    import gc, os
    import numpy as np
    import runetensor as rt
    from runetensor._backend.fusion import _cache, _fuse
    _cache.MEMORY_KERNELS = 0  # only programs keep kernels loaded
    folder = os.path.realpath(os.environ["RUNETENSOR_JIT_CACHE"])

    def loaded():
        with open("/proc/self/maps") as fh:
            return {ln.split(None, 5)[5].strip() for ln in fh if len(ln.split(None, 5)) == 6
                    and ln.split(None, 5)[5].startswith(folder)}

    xn = np.linspace(-1, 1, 40)
    x = rt.asarray(xn)
    fs = [rt.jit(lambda a, k=k: rt.tanh(a) * k + a) for k in (2.0, 3.0, 4.0)]
    for f in fs:
        f(x)
    _fuse.clear_memory_cache()
    gc.collect()
    print("LIVE", len(loaded()))
    for _ in range(3):  # the programs still call their kernels
        for k, f in zip((2.0, 3.0, 4.0), fs):
            assert np.allclose(np.asarray(f(x)), np.tanh(xn) * k + xn)
            assert rt.jit_stats(f)["compiles"] == 1
    del f
    fs.clear()
    gc.collect()
    print("AFTER", len(loaded()))
""")


@needs_cc
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="counts mapped libraries in /proc/self/maps")
def test_kernels_unload_only_when_no_program_uses_them(tmp_path):
    out = _child(tmp_path, tmp_path / "cache", UNLOAD_CHILD)
    words = out.split()
    live, after = int(words[words.index("LIVE") + 1]), int(words[words.index("AFTER") + 1])
    assert live == 3 and after == 0, out
