"""A seccomp filter that refuses new unix-domain sockets (standard library only: it also runs inside
the sandbox, copied next to the inner relay).

`--unshare-net` takes every network away but one: a unix socket the host listens on at a path the
sandbox can see is still reachable (seen: net-unix-socket escaped). Seccomp cannot read the path a
`connect` names, but it can refuse `socket(AF_UNIX, ...)`, and without one no such connect is
possible. `socketpair`, a different system call, stays allowed: runtimes wire their child processes'
stdio with it. `io_uring_setup` is refused too, since io_uring can open sockets without the
`socket` call (runtimes fall back to plain system calls), and so is the x32 ABI, whose syscall
numbers would slip past the check. An unknown architecture is refused outright: a filter that does
not know the numbers must not pretend to hold.
"""

from __future__ import annotations

import os
import platform
import struct

__all__ = ["supported", "program", "apply", "install", "program_fd"]

# (AUDIT_ARCH, socket, io_uring_setup) per machine
_ARCH = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
_AF_UNIX = 1
_EACCES = 13
_X32_BIT = 0x40000000

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_KILL_PROCESS = 0x80000000

# struct seccomp_data: nr @0, arch @4, instruction_pointer @8, args[6] @16 (u64 each; low word first on LE)
_NR, _ARCH_OFF, _ARG0 = 0, 4, 16


def supported() -> bool:
    return platform.machine() in _ARCH


def program() -> bytes:
    """The filter as an array of `struct sock_filter`, ready for prctl or `bwrap --seccomp`."""
    machine = platform.machine()
    if machine not in _ARCH:
        raise OSError(f"no unix-socket filter for architecture {machine}")
    arch, nr_socket, nr_io_uring = _ARCH[machine]
    deny = _ERRNO | _EACCES
    insns = [
        (_LD_W_ABS, 0, 0, _ARCH_OFF),
        (_JEQ_K, 1, 0, arch),  # 1: right arch -> go on
        (_RET_K, 0, 0, _KILL_PROCESS),  # 2: another ABI (e.g. i386 via int 0x80): nothing is known
        (_LD_W_ABS, 0, 0, _NR),  # 3
        (_JGE_K, 0, 1, _X32_BIT),  # 4: x32 numbers -> deny
        (_RET_K, 0, 0, deny),  # 5
        (_JEQ_K, 0, 1, nr_io_uring),  # 6
        (_RET_K, 0, 0, deny),  # 7
        (_JEQ_K, 0, 3, nr_socket),  # 8: not socket -> allow
        (_LD_W_ABS, 0, 0, _ARG0),  # 9: the domain
        (_JEQ_K, 0, 1, _AF_UNIX),  # 10
        (_RET_K, 0, 0, deny),  # 11
        (_RET_K, 0, 0, _ALLOW),  # 12
    ]
    return b"".join(struct.pack("=HBBI", *i) for i in insns)


def apply() -> None:
    """Install the filter on this process (and so on everything it executes); raises OSError on failure."""
    install(program())


def install(code: bytes) -> None:
    """Install a seccomp program (`struct sock_filter` array) on this process; also syscall_filter's loader."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def main(argv: list[str]) -> int:
    """`python3 -I -S unix_filter.py PROGRAM -- CMD...`: install the seccomp program in file PROGRAM (a struct
    sock_filter array, e.g. the host-built denylist) and exec CMD under it; exit 4 when it cannot be installed.
    For a sandbox that cannot be handed a descriptor (`bwrap --seccomp FD`): the MCP tool inventory's."""
    if len(argv) < 3 or argv[1] != "--":
        os.write(2, b"usage: unix_filter.py PROGRAM -- CMD...\n")
        return 2
    try:
        with open(argv[0], "rb") as f:
            install(f.read())
    except OSError as exc:
        os.write(
            2,
            f"agent-box: the sandbox's seccomp filter cannot be applied ({exc}); refusing to start "
            f"{argv[2]}\n".encode(),
        )
        return 4
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as exc:
        os.write(2, f"agent-box: cannot start {argv[2]}: {exc.strerror or exc}\n".encode())
        return 127


def program_fd() -> int:
    """A readable, inheritable descriptor holding the filter, for `bwrap --seccomp FD`."""
    fd = os.memfd_create("agentbox-unix-filter", 0)  # no MFD_CLOEXEC: bwrap must inherit it
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
