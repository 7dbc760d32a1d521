"""The seccomp denylist compiles to what libseccomp would build from the same list, and the kernel holds it.

A tiny classic-BPF interpreter runs our program and libseccomp's (pyseccomp, the test extra) over every
listed call of every ABI with a set of arguments; a wrong number or jump shows as a different answer.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from agentbox.sandbox import syscall_filter

try:
    import pyseccomp
except (ImportError, OSError):  # pyseccomp is in the test extra; it loads libseccomp.so.2 at import
    if os.environ.get("CI"):
        raise
    pyseccomp = None

needs_libseccomp = pytest.mark.skipif(pyseccomp is None, reason="pyseccomp or libseccomp.so.2 is missing")
MACHINE = os.uname().machine
on_a_covered_machine = pytest.mark.skipif(MACHINE not in ("x86_64", "aarch64"), reason=f"no program for {MACHINE}")

ROOT = str(Path(syscall_filter.__file__).parents[2])
DATA = Path(syscall_filter.__file__).parents[1] / "data" / "seccomp"
RULES = yaml.safe_load((DATA / "denylist.yaml").read_text())
NUMBERS = yaml.safe_load((DATA / "syscalls.yaml").read_text())

ABIS = {"x86_64": ("x86_64", "i386"), "aarch64": ("aarch64", "arm")}
AUDIT_ARCH = {"x86_64": 0xC000003E, "i386": 0x40000003, "aarch64": 0xC00000B7, "arm": 0x40000028}
SECCOMP_ARCH = {"x86_64": "X86_64", "i386": "X86", "aarch64": "AARCH64", "arm": "ARM"}  # pyseccomp.Arch names
ALLOW, KILL_PROCESS = 0x7FFF0000, 0x80000000


def refused(code: int) -> int:
    return 0x00050000 | code


# Arguments: each CLONE_NEW* bit and everyday clone flags (threads, fork, vfork); socket domains by
# types by protocols; terminal ioctls. Unused argument slots stay zero.
CLONE_NEW = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080]
FLAGS = CLONE_NEW + [0, 0x003D0F00, 0x01200011, 0x00004111, 0x7E020080]
DOMAINS = [2, 10, 1, 40, 16]  # AF_INET, AF_INET6, AF_UNIX, AF_VSOCK, AF_NETLINK
TYPES = [1, 2, 3, 5, 2 | 0x80000, 1 | 0x800]  # STREAM, DGRAM, RAW, SEQPACKET, DGRAM|CLOEXEC, STREAM|NONBLOCK
PROTOCOLS = [0, 4, 15]  # NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_KOBJECT_UEVENT (and IP's defaults)
IOCTLS = [0x5412, 0x541C, 0x5401, 0x541B]  # TIOCSTI, TIOCLINUX, TCGETS, FIONREAD
VECTORS = (
    [(f, 0, 0, 0, 0, 0) for f in FLAGS]
    + [(d, t, p, 0, 0, 0) for d, t, p in itertools.product(DOMAINS, TYPES, PROTOCOLS)]
    + [(1, cmd, 0, 0, 0, 0) for cmd in IOCTLS]
)

JUMPS = {0x15: lambda a, k: a == k, 0x25: lambda a, k: a > k, 0x35: lambda a, k: a >= k, 0x45: lambda a, k: a & k}


def run_bpf(code: bytes, nr: int, arch: int, args=(0,) * 6) -> int:
    """What a seccomp program returns for one call: an interpreter of the classic BPF seccomp programs use."""
    data = struct.pack("<IIQ6Q", nr & 0xFFFFFFFF, arch, 0, *args)
    insns = list(struct.iter_unpack("=HBBI", code))
    a, x, mem, pc = 0, 0, [0] * 16, 0
    while True:
        op, jt, jf, k = insns[pc]
        pc += 1
        if op == 0x20:  # ld [k]
            assert k % 4 == 0 and k < len(data), f"load outside seccomp_data at {pc - 1}"
            a = struct.unpack_from("<I", data, k)[0]
        elif op in (0x00, 0x01):  # ld #k, ldx #k
            a, x = (k, x) if op == 0x00 else (a, k)
        elif op in (0x60, 0x61):  # ld M[k], ldx M[k]
            a, x = (mem[k], x) if op == 0x60 else (a, mem[k])
        elif op in (0x02, 0x03):  # st M[k], stx M[k]
            mem[k] = a if op == 0x02 else x
        elif op == 0x54:  # and #k
            a &= k
        elif op == 0x05:  # ja
            pc += k
        elif op in JUMPS:
            pc += jt if JUMPS[op](a, k) else jf
        elif op == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"opcode {op:#x} at {pc - 1} is not interpreted")


def libseccomp_args(cond: dict) -> list:
    """One condition as libseccomp alternatives: a rule per alternative, and libseccomp ORs rules."""
    i, mask = cond["arg"], cond.get("mask", 0xFFFFFFFF)
    if "eq" in cond:
        return [pyseccomp.Arg(i, pyseccomp.MASKED_EQ, mask, cond["eq"])]
    if "in" in cond:
        return [pyseccomp.Arg(i, pyseccomp.MASKED_EQ, mask, v) for v in cond["in"]]
    if "any_bits" in cond:
        bits = [1 << b for b in range(32) if cond["any_bits"] >> b & 1]
        return [pyseccomp.Arg(i, pyseccomp.MASKED_EQ, bit, bit) for bit in bits]
    return [pyseccomp.Arg(i, pyseccomp.NE, cond["ne"])]  # compares 64 bits: VECTORS keep high words zero


def libseccomp_program(machine: str, deny_unix: bool) -> bytes:
    """libseccomp's program for the same list, by name: its own numbers, its own jumps."""
    f = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    f.set_attr(pyseccomp.Attr.ACT_BADARCH, pyseccomp.KILL_PROCESS)
    wanted = [getattr(pyseccomp.Arch, SECCOMP_ARCH[abi]) for abi in ABIS[machine]]
    for arch in wanted:
        if not f.exist_arch(arch):
            f.add_arch(arch)
    if pyseccomp.system_arch() not in wanted:
        f.remove_arch(pyseccomp.system_arch())
    # Calls refused outright first: libseccomp also folds each i386 socket rule into a socketcall rule
    # without the arguments, and two of those with different errnos clash (EEXIST) unless socketcall's
    # own outright refusal is already there to absorb them.
    for rule in sorted(RULES, key=lambda r: bool(r.get("when"))):
        if rule.get("variant") and not deny_unix:
            continue
        action = pyseccomp.ERRNO(getattr(errno, rule["action"]["errno"]))
        for name in rule["syscalls"]:
            for args in itertools.product(*(libseccomp_args(c) for c in rule.get("when", []))):
                f.add_rule(action, name, *args)
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def resolve(abi: str, nr: int) -> str | None:
    try:
        return pyseccomp.resolve_syscall(getattr(pyseccomp.Arch, SECCOMP_ARCH[abi]), nr).decode()
    except ValueError:
        return None


# -- the data --------------------------------------------------------------------------------------


def test_every_entry_says_what_an_attacker_does_with_the_call_and_where_the_rule_comes_from():
    for row in syscall_filter.describe():
        assert row["reason"].strip() and row["source"].strip(), row["name"]
        assert row["action"] in ("errno EPERM", "errno EACCES", "errno ENOSYS"), row


def test_every_named_call_exists_on_some_covered_abi():
    # umount, socketcall, stime and clock_settime64 exist only on the 32-bit ABIs; the rest on x86_64 or aarch64
    named = {name for rule in RULES for name in rule["syscalls"]}
    native = set(NUMBERS["x86_64"]) | set(NUMBERS["aarch64"])
    assert named - native == {"umount", "socketcall", "stime", "clock_settime64"}
    assert named - native <= set(NUMBERS["i386"]) | set(NUMBERS["arm"])


@needs_libseccomp
def test_every_number_is_libseccomps_and_no_listed_call_is_missing_from_an_abi():
    named = {name for rule in RULES for name in rule["syscalls"]}
    for abi in AUDIT_ARCH:
        for name, nr in NUMBERS[abi].items():
            assert resolve(abi, nr) == name, (abi, name, nr)
        found = {resolve(abi, nr): nr for nr in range(1024)}
        assert {n: nr for n, nr in found.items() if n in named} == NUMBERS[abi], abi


@pytest.mark.parametrize(
    "entry",
    [
        {
            "syscalls": ["personality"],
            "action": {"errno": "EPERM"},
            "reason": "r",
            "source": "s",
            "when": [{"arg": 0, "ne": 0}, {"arg": 0, "ne": 8}],
        },  # two conditions on one argument
        {"syscalls": ["mount"], "action": {"errno": "EPERM"}, "reason": "r", "source": "s"},  # mount is listed already
        {"syscalls": ["mount_beyond"], "action": {"errno": "EPERM"}, "reason": "r", "source": "s"},  # no such call
        {"syscalls": ["bpf"], "action": {"errno": "EPERM"}, "source": "s"},  # no reason
        {"syscalls": ["ioctl"], "action": {"errno": "ENOENT"}, "reason": "r", "source": "s"},  # not an allowed errno
        {
            "syscalls": ["ioctl"],
            "action": {"errno": "EPERM"},
            "reason": "r",
            "source": "s",
            "when": [{"arg": 1, "eq": "0x5412"}],
        },  # a string, not a number
    ],
)
def test_an_entry_libseccomp_could_not_express_or_a_reviewer_could_not_judge_is_refused_at_build(
    entry, tmp_path, monkeypatch
):
    path = tmp_path / "denylist.yaml"
    path.write_text(yaml.safe_dump(RULES + [entry]))
    monkeypatch.setattr(syscall_filter, "_DENYLIST", str(path))
    with pytest.raises(ValueError, match="denylist entry"):
        syscall_filter.program("x86_64", True)


# -- the compiled program --------------------------------------------------------------------------


@needs_libseccomp
@pytest.mark.parametrize("deny_unix", [False, True], ids=["base", "deny_unix"])
@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_our_program_answers_every_call_and_argument_as_libseccomps_program_does(machine, deny_unix):
    ours, theirs = syscall_filter.program(machine, deny_unix), libseccomp_program(machine, deny_unix)
    for abi in ABIS[machine]:
        listed = set(NUMBERS[abi].values())
        calls = [(nr, args) for nr in sorted(listed) for args in VECTORS]
        calls += [(nr, (0,) * 6) for nr in range(max(listed) + 16) if nr not in listed]  # everything else
        for nr, args in calls:
            expected = run_bpf(theirs, nr, AUDIT_ARCH[abi], args)
            assert run_bpf(ours, nr, AUDIT_ARCH[abi], args) == expected, (abi, resolve(abi, nr), [hex(a) for a in args])


@needs_libseccomp
@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_an_abi_the_machine_does_not_run_is_killed_as_libseccomp_kills_it(machine):
    ours, theirs = syscall_filter.program(machine, False), libseccomp_program(machine, False)
    for arch in [a for abi, a in AUDIT_ARCH.items() if abi not in ABIS[machine]] + [0, 0xC00000F3]:  # +riscv64
        assert run_bpf(ours, 0, arch) == run_bpf(theirs, 0, arch) == KILL_PROCESS


def test_every_x32_call_is_refused_with_eperm():
    ours = syscall_filter.program("x86_64", False)
    for nr in range(0x40000000, 0x40000000 + 1024):
        assert run_bpf(ours, nr, AUDIT_ARCH["x86_64"]) == refused(errno.EPERM), hex(nr)


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_high_bits_of_an_argument_never_change_the_answer_since_the_kernel_truncates_ints(machine):
    ours = syscall_filter.program(machine, True)
    abi = ABIS[machine][0]
    for nr in NUMBERS[abi].values():
        for args in VECTORS:
            garbage = tuple(a | 0xDEADBEEF00000000 for a in args)
            assert run_bpf(ours, nr, AUDIT_ARCH[abi], garbage) == run_bpf(ours, nr, AUDIT_ARCH[abi], args)


@pytest.mark.parametrize("abi", list(AUDIT_ARCH))
def test_forks_threads_and_ordinary_sockets_pass_while_namespaces_vsock_and_tiocsti_do_not(abi):
    machine = next(m for m, abis in ABIS.items() if abi in abis)
    base, deny_unix = syscall_filter.program(machine, False), syscall_filter.program(machine, True)
    nr, arch = NUMBERS[abi], AUDIT_ARCH[abi]

    def answer(code, name, *args):
        return run_bpf(code, nr[name], arch, args + (0,) * (6 - len(args)))

    assert answer(base, "clone", 0x003D0F00) == answer(base, "clone", 0x01200011) == ALLOW
    assert answer(base, "clone", 0x10000000 | 17) == answer(base, "unshare", 0x00020000) == refused(errno.EPERM)
    assert answer(base, "unshare", 0x400) == ALLOW  # CLONE_FILES: no namespace
    assert answer(base, "clone3") == refused(errno.ENOSYS)
    assert answer(base, "socket", 2, 1) == answer(base, "socket", 10, 2) == answer(base, "socket", 16, 3, 0) == ALLOW
    assert answer(base, "socket", 40, 1) == answer(base, "socket", 16, 3, 15) == refused(errno.EPERM)
    assert answer(base, "socket", 1, 1) == answer(base, "socketpair", 1, 2) == ALLOW
    assert answer(deny_unix, "socket", 1, 1) == answer(deny_unix, "socketpair", 1, 2 | 0x80000) == refused(errno.EACCES)
    assert answer(deny_unix, "socketpair", 1, 1) == answer(deny_unix, "socketpair", 1, 5) == ALLOW
    assert answer(base, "ioctl", 0, 0x5401) == ALLOW
    assert answer(base, "ioctl", 0, 0x5412) == answer(base, "ioctl", 0, 0x541C) == refused(errno.EPERM)
    assert answer(base, "ptrace") == answer(base, "mount") == answer(base, "io_uring_setup") == refused(errno.EPERM)
    assert answer(base, "fsopen") == refused(errno.ENOSYS)
    if "socketcall" in nr:
        assert answer(base, "socketcall", 1) == refused(errno.EPERM)


def test_a_machine_without_a_program_is_named_in_the_error():
    with pytest.raises(OSError, match="riscv64"):
        syscall_filter.program("riscv64", False)


# -- the real kernel -------------------------------------------------------------------------------

PROBE = r"""
import ctypes, fcntl, json, os, socket, subprocess, sys, threading
sys.path.insert(0, {root!r})
from agentbox.sandbox import syscall_filter
NR = {numbers!r}
libc = ctypes.CDLL(None, use_errno=True)

def call(name, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return 0 if libc.syscall(ctypes.c_long(NR[name]), *args) != -1 else ctypes.get_errno()

def attempt(fn):
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno

def thread():
    done = []
    t = threading.Thread(target=done.append, args=(1,))
    t.start()
    t.join()
    assert done

syscall_filter.apply(syscall_filter.program(os.uname().machine, {deny_unix}))
r, w = os.pipe()
print(json.dumps({{
    "mount": call("mount", b"none", {mnt!r}, b"tmpfs", 0, None),
    "umount2": call("umount2", {mnt!r}, 0),
    "unshare(CLONE_NEWUSER)": call("unshare", 0x10000000),
    "clone3": call("clone3", None, 0),
    "fsopen": call("fsopen", b"tmpfs", 0),
    "ptrace(PTRACE_TRACEME)": call("ptrace", 0, 0, 0, 0),
    "process_vm_readv": call("process_vm_readv", os.getppid(), None, 0, None, 0, 0),
    "pidfd_getfd": call("pidfd_getfd", 0, 0, 0),
    "keyctl": call("keyctl", 0, -3, 0),
    "bpf": call("bpf", 5, None, 0),
    "ioctl(TIOCSTI)": attempt(lambda: fcntl.ioctl(r, 0x5412, b"x")),
    "socket(AF_VSOCK)": attempt(lambda: socket.socket(40, socket.SOCK_STREAM).close()),
    "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)": attempt(lambda: socket.socket(16, socket.SOCK_RAW, 15).close()),
    "socket(AF_NETLINK, NETLINK_ROUTE)": attempt(lambda: socket.socket(16, socket.SOCK_RAW, 0).close()),
    "if_nameindex": attempt(socket.if_nameindex),
    "socket(AF_INET)": attempt(lambda: socket.socket(socket.AF_INET).close()),
    "socket(AF_UNIX)": attempt(lambda: socket.socket(socket.AF_UNIX).close()),
    "socketpair(AF_UNIX, SOCK_STREAM)": attempt(lambda: [s.close() for s in socket.socketpair()]),
    "socketpair(AF_UNIX, SOCK_DGRAM)": attempt(lambda: [s.close() for s in socket.socketpair(type=socket.SOCK_DGRAM)]),
    "thread": attempt(thread),
    "subprocess true": subprocess.run(["true"]).returncode,
}}))
"""


@on_a_covered_machine
@pytest.mark.parametrize("deny_unix", [False, True], ids=["base", "deny_unix"])
def test_the_kernel_refuses_the_listed_calls_and_keeps_forks_threads_and_ordinary_sockets(deny_unix, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    probe = PROBE.format(root=ROOT, numbers=NUMBERS[MACHINE], deny_unix=deny_unix, mnt=str(mnt).encode())
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    finally:
        if os.path.ismount(mnt):  # only if the filter failed: we may be root
            subprocess.run(["umount", str(mnt)], check=False)
    assert done.returncode == 0, done.stderr
    eperm, enosys, unix = errno.EPERM, errno.ENOSYS, (errno.EACCES if deny_unix else 0)
    assert json.loads(done.stdout) == {
        "mount": eperm,
        "umount2": eperm,
        "unshare(CLONE_NEWUSER)": eperm,
        "clone3": enosys,
        "fsopen": enosys,
        "ptrace(PTRACE_TRACEME)": eperm,
        "process_vm_readv": eperm,
        "pidfd_getfd": eperm,
        "keyctl": eperm,
        "bpf": eperm,
        "ioctl(TIOCSTI)": eperm,
        "socket(AF_VSOCK)": eperm,
        "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)": eperm,
        "socket(AF_NETLINK, NETLINK_ROUTE)": 0,
        "if_nameindex": 0,
        "socket(AF_INET)": 0,
        "socket(AF_UNIX)": unix,
        "socketpair(AF_UNIX, SOCK_STREAM)": 0,
        "socketpair(AF_UNIX, SOCK_DGRAM)": unix,
        "thread": 0,
        "subprocess true": 0,
    }


@on_a_covered_machine
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
def test_bwrap_installs_the_program_from_program_fd(env, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", env["AGENTBOX_HOME"])
    probe = (
        "import ctypes, subprocess; libc = ctypes.CDLL(None, use_errno=True); "
        "libc.unshare(0x10000000); print(ctypes.get_errno(), subprocess.run(['true']).returncode)"
    )
    fd = syscall_filter.program_fd(False)
    try:
        done = subprocess.run(
            [
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--seccomp",
                str(fd),
                "--",
                sys.executable,
                "-c",
                probe,
            ],
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(fd)
    assert done.stdout.split() == [str(errno.EPERM), "0"], done.stderr


# -- the cache -------------------------------------------------------------------------------------

CACHED = r"""
import json, os, sys
sys.path.insert(0, {root!r})
from agentbox.sandbox import syscall_filter
fd = syscall_filter.program_fd(True)
code = os.read(fd, 1 << 16).hex()
print(json.dumps({{"yaml": "yaml" in sys.modules, "inheritable": os.get_inheritable(fd), "code": code}}))
"""


@on_a_covered_machine
def test_program_fd_builds_once_then_serves_the_same_program_from_the_cache_without_importing_yaml(env):
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", CACHED.format(root=ROOT)],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
        )
        for _ in range(2)
    ]
    assert [r["yaml"] for r in runs] == [True, False]
    assert runs[0]["code"] == runs[1]["code"] == syscall_filter.program(MACHINE, True).hex()
    assert all(r["inheritable"] for r in runs)
    cached = os.listdir(Path(env["AGENTBOX_HOME"]) / "cache" / "seccomp")
    assert len(cached) == 1 and cached[0].endswith(f"-{MACHINE}-deny-unix.bpf")
