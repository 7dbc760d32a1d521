"""The seccomp denylist of a sandboxed run, compiled from data into classic BPF per architecture.

Threat model: everything inside the bubblewrap sandbox (the harness, its tools, whatever they run)
is hostile code running as the user. The namespaces and binds bwrap sets up are the boundary; this
filter takes away the system calls that would reshape that boundary from inside (mounts, new
namespaces, chroot), reach into other processes of the run (ptrace, process_vm_*, pidfd_getfd),
expose the kernel's riskiest code (bpf, perf, io_uring, keyrings, modules) or leave through a door
the namespaces keep open (vsock, netlink beyond NETLINK_ROUTE, the terminal's input queue, and in
the `deny_unix` variant new unix sockets). It is a denylist: anything not named is allowed, so
runtimes keep working; it does not take away what a process already holds (inherited descriptors).

The list, with a reason and a source per entry, is agentbox/data/seccomp/denylist.yaml; the numbers
per ABI are syscalls.yaml, taken from libseccomp. The tests run every program through a BPF
interpreter next to libseccomp's program for the same rules, so a wrong number or jump shows.

Layout: the arch check dispatches to one section per ABI the machine runs (x86_64 and i386 on
x86_64; aarch64 and arm on aarch64); any other AUDIT_ARCH kills the process, since its numbers are
unknown. x32 calls (AUDIT_ARCH_X86_64 with bit 30 of nr set) are all refused with EPERM rather than
filtered by their own numbers: no mainstream distribution ships x32 user space, and a blanket refusal
also covers x32 calls added to the kernel after this list. i386's socketcall is refused outright (its
arguments sit behind a pointer). Argument checks load the low 32-bit word of an argument (offset
16 + 8*i in struct seccomp_data; every covered ABI is little-endian): those arguments are C ints,
which the kernel truncates, so high bits must not change the answer (CVE-2019-10063).
"""

from __future__ import annotations

import os

from agentbox.hot import agentbox_home, sha256

__all__ = ["program", "program_fd", "host_program", "host_program_path", "describe", "apply"]

_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "seccomp")
_DENYLIST = os.path.join(_DATA, "denylist.yaml")
_SYSCALLS = os.path.join(_DATA, "syscalls.yaml")

# platform.machine() -> the (ABI name in syscalls.yaml, AUDIT_ARCH) its kernel runs, native first
_MACHINES = {
    "x86_64": (("x86_64", 0xC000003E), ("i386", 0x40000003)),
    "aarch64": (("aarch64", 0xC00000B7), ("arm", 0x40000028)),
}
_X32_BIT = 0x40000000
# asm-generic values, the same on every covered ABI; the list may use no others
_ERRNOS = {"EPERM": 1, "EACCES": 13, "ENOSYS": 38}
_OPS = ("eq", "ne", "in", "any_bits")
_VARIANTS = ("deny_unix",)
_KEYS = {"syscalls", "action", "when", "variant", "reason", "source"}

# classic BPF opcodes and seccomp return values
_LD_W_ABS, _AND_K, _JA = 0x20, 0x54, 0x05
_JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO, _KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
# struct seccomp_data: nr @0, arch @4, instruction_pointer @8, args[6] @16 (u64 each)
_NR, _ARCH, _ARGS = 0, 4, 16


def program(machine: str, deny_unix: bool) -> bytes:
    """The filter as an array of `struct sock_filter` for a kernel of `machine` (platform.machine())."""
    abis = _abis(machine)
    rules, numbers = _load()
    rules = [r for r in rules if r.get("variant") is None or deny_unix]
    asm = _Assembler()
    asm.op(_LD_W_ABS, _ARCH)
    for abi, audit_arch in abis:
        asm.op(_JEQ_K, audit_arch, jf=(skip := asm.label()))
        asm.op(_JA, abi)
        asm.place(skip)
    asm.op(_RET_K, _KILL_PROCESS)
    for abi, _ in abis:
        asm.place(abi)
        asm.op(_LD_W_ABS, _NR)
        if abi == "x86_64":  # x32 is refused whole (see above)
            asm.op(_JGE_K, _X32_BIT, jf=(native := asm.label()))
            asm.op(_RET_K, _ERRNO | _ERRNOS["EPERM"])
            asm.place(native)
        _section(asm, rules, numbers[abi])
        asm.op(_RET_K, _ALLOW)
    return asm.assemble()


def program_fd(deny_unix: bool) -> int:
    """A readable, inheritable memfd holding this host's program, for `bwrap --seccomp FD`."""
    code = host_program(deny_unix)
    fd = os.memfd_create("agentbox-seccomp", 0)  # no MFD_CLOEXEC: bwrap must inherit it
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def host_program(deny_unix: bool) -> bytes:
    """This host's program. Built once per version of the data (and of this compiler) and cached under
    $AGENTBOX_HOME/cache/seccomp; a cache hit reads a few small files and imports nothing more.
    """
    path = host_program_path(deny_unix)
    with open(path, "rb") as f:
        return f.read()


def host_program_path(deny_unix: bool) -> str:
    """The cached file of this host's program (built first when missing), for a loader that reads it by path."""
    machine = os.uname().machine  # platform.machine() without importing platform
    _abis(machine)
    digest = sha256()
    for source in (_DENYLIST, _SYSCALLS, __file__):  # the compiler too: a changed one must not reuse a program
        with open(source, "rb") as f:
            digest.update(f.read())
    variant = "deny-unix" if deny_unix else "base"
    path = os.path.join(agentbox_home(), "cache", "seccomp", f"{digest.hexdigest()}-{machine}-{variant}.bpf")
    if not os.path.exists(path):
        code = program(machine, deny_unix)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"  # concurrent runs share the cache: readers see all or nothing
        with open(tmp, "wb") as f:
            f.write(code)
        os.replace(tmp, path)
    return path


def describe() -> list[dict]:
    """One row per system call and entry: name, action, condition, variant, reason, source."""
    rules, _ = _load()
    return [
        {
            "name": name,
            "action": f"errno {rule['action']['errno']}",
            "condition": _condition_text(rule),
            "variant": rule.get("variant"),
            "reason": rule["reason"],
            "source": rule["source"],
        }
        for rule in rules
        for name in rule["syscalls"]
    ]


def apply(code: bytes) -> None:
    """Install `code` on this process (and everything it executes); raises OSError on failure."""
    from agentbox.sandbox.unix_filter import (
        install,
    )  # one loader for both filters; unix_filter stays standard-library only

    install(code)


def _abis(machine: str) -> tuple:
    if machine not in _MACHINES:
        raise OSError(f"no seccomp denylist for architecture {machine}")
    return _MACHINES[machine]


def _load() -> tuple[list[dict], dict[str, dict[str, int]]]:
    """The denylist entries (checked) and the numbers per ABI."""
    import yaml  # deferred: a cached program_fd is on the measured hot path of `sandbox run` and `launch`

    with open(_DENYLIST) as f:
        rules = yaml.safe_load(f)
    with open(_SYSCALLS) as f:
        numbers = yaml.safe_load(f)
    known = {name for table in numbers.values() for name in table}
    unconditional: set[str] = set()
    named: set[str] = set()
    for rule in rules:
        _check(rule, known)
        # a call refused whatever its arguments cannot also have conditional entries: one would hide the other
        names = set(rule["syscalls"])
        if names & unconditional or (not rule.get("when") and names & named):
            raise ValueError(f"denylist entry {rule['syscalls']}: a call refused outright appears in another entry")
        named |= names
        if not rule.get("when"):
            unconditional |= names
    return rules, numbers


def _check(rule: dict, known: set[str]) -> None:
    where = f"denylist entry {rule.get('syscalls')}"
    if extra := set(rule) - _KEYS:
        raise ValueError(f"{where}: unknown keys {sorted(extra)}")
    if not (rule.get("reason") and rule.get("source")):
        raise ValueError(f"{where}: needs a reason and a source")
    if (rule.get("action") or {}).get("errno") not in _ERRNOS:
        raise ValueError(f"{where}: action must be an errno of {sorted(_ERRNOS)}")
    if rule.get("variant") not in (None, *_VARIANTS):
        raise ValueError(f"{where}: unknown variant {rule['variant']!r}")
    if unknown := set(rule["syscalls"]) - known:
        raise ValueError(f"{where}: no ABI has {sorted(unknown)}")
    args = [cond.get("arg") for cond in rule.get("when", [])]
    if len(set(args)) != len(args) or not all(a in range(6) for a in args):
        raise ValueError(f"{where}: one condition per argument 0-5 (as libseccomp can express it)")
    for cond in rule.get("when", []):
        ops = [op for op in _OPS if op in cond]
        if len(ops) != 1 or set(cond) - {"arg", "mask", *_OPS} or ("mask" in cond and ops[0] not in ("eq", "in")):
            raise ValueError(f"{where}: condition {cond} needs one of {_OPS} (mask only with eq or in)")
        values = [cond.get("mask", 0), *(cond[ops[0]] if ops[0] == "in" else [cond[ops[0]]])]
        if not all(isinstance(v, int) and 0 <= v <= 0xFFFFFFFF for v in values):
            raise ValueError(f"{where}: condition {cond} compares a 32-bit word, so its values are 32-bit integers")


def _section(asm: _Assembler, rules: list[dict], numbers: dict[str, int]) -> None:
    """One ABI's checks, with A = nr on entry and on every fall-through; ends by falling through."""
    # Argument checks first: the kernel caches the verdict of a call whose answer never depends on
    # its arguments (Linux 5.11+), so only these (ioctl, socket, clone: hot calls) walk the program
    # on every call, and near the top that walk is short.
    conditional: dict[int, list[dict]] = {}
    outright: dict[int, list[int]] = {}
    for rule in rules:
        for name in rule["syscalls"]:
            if name in numbers:
                if rule.get("when"):
                    conditional.setdefault(numbers[name], []).append(rule)
                else:
                    outright.setdefault(_ERRNOS[rule["action"]["errno"]], []).append(numbers[name])
    for nr, nr_rules in conditional.items():
        asm.op(_JEQ_K, nr, jf=(next_call := asm.label()))
        for rule in nr_rules:
            fail = asm.label()
            for cond in rule["when"]:
                _condition(asm, cond, fail)
            asm.op(_RET_K, _ERRNO | _ERRNOS[rule["action"]["errno"]])
            asm.place(fail)
        asm.op(_RET_K, _ALLOW)
        asm.place(next_call)
    for errno, nrs in outright.items():  # one shared return per errno
        hit, miss = asm.label(), asm.label()
        for nr in nrs[:-1]:
            asm.op(_JEQ_K, nr, jt=hit)
        asm.op(_JEQ_K, nrs[-1], jf=miss)
        asm.place(hit)
        asm.op(_RET_K, _ERRNO | errno)
        asm.place(miss)


def _condition(asm: _Assembler, cond: dict, fail: str) -> None:
    asm.op(_LD_W_ABS, _ARGS + 8 * cond["arg"])  # the low word: little-endian u64
    if "mask" in cond:
        asm.op(_AND_K, cond["mask"])
    if "eq" in cond:
        asm.op(_JEQ_K, cond["eq"], jf=fail)
    elif "ne" in cond:
        asm.op(_JEQ_K, cond["ne"], jt=fail)
    elif "any_bits" in cond:
        asm.op(_JSET_K, cond["any_bits"], jf=fail)
    else:
        match = asm.label()
        for value in cond["in"][:-1]:
            asm.op(_JEQ_K, value, jt=match)
        asm.op(_JEQ_K, cond["in"][-1], jf=fail)
        asm.place(match)


def _condition_text(rule: dict) -> str | None:
    parts = []
    for cond in rule.get("when", []):
        arg = f"arg{cond['arg']}" + (f" & {cond['mask']:#x}" if "mask" in cond else "")
        if "eq" in cond:
            parts.append(f"{arg} == {cond['eq']:#x}")
        elif "ne" in cond:
            parts.append(f"{arg} != {cond['ne']:#x}")
        elif "any_bits" in cond:
            parts.append(f"{arg} & {cond['any_bits']:#x} != 0")
        else:
            parts.append(f"{arg} in ({', '.join(f'{v:#x}' for v in cond['in'])})")
    return " and ".join(parts) or None


class _Assembler:
    """Instructions with forward jumps to labels, resolved (and range-checked) at the end."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, str | None, str | None]] = []
        self.labels: dict[str, int] = {}
        self.count = 0

    def label(self) -> str:
        self.count += 1
        return f"L{self.count}"

    def place(self, label: str) -> None:
        self.labels[label] = len(self.code)

    def op(self, code: int, k: int | str = 0, jt: str | None = None, jf: str | None = None) -> None:
        self.code.append((code, k, jt, jf))

    def assemble(self) -> bytes:
        import struct  # only when a program is built: a cached one is read on the hot path (benchmarks/sandbox_run.py)

        out = []
        for i, (code, k, jt, jf) in enumerate(self.code):
            if code == _JA:
                assert isinstance(k, str)  # an unconditional jump's k is the label it jumps to
                k = self._offset(i, k, 2**32 - 1)
            out.append(struct.pack("=HBBI", code, self._offset(i, jt, 255), self._offset(i, jf, 255), k))
        return b"".join(out)

    def _offset(self, i: int, label: str | None, limit: int) -> int:
        offset = 0 if label is None else self.labels[label] - i - 1
        if not 0 <= offset <= limit:  # classic BPF jumps only forward, conditionals at most 255
            raise ValueError(f"seccomp program: jump from {i} to {label} out of range")
        return offset
