"""A host SysV shared-memory segment holding a secret: the target of the IPC-namespace vector.

Made with libc through ctypes (the standard library has no SysV shm); owned by the user running the
suite, mode 0600, removed at the end of the attempt."""

from __future__ import annotations

import ctypes

__all__ = ["Segment"]

_IPC_CREAT, _IPC_EXCL, _IPC_RMID = 0o1000, 0o2000, 0
_SIZE = 4096


class Segment:
    def __init__(self, key: int, content: str):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.shmat.restype = ctypes.c_void_p
        self.key = key
        self.id = self._libc.shmget(ctypes.c_int(key), ctypes.c_size_t(_SIZE), _IPC_CREAT | _IPC_EXCL | 0o600)
        if self.id < 0:
            raise OSError(ctypes.get_errno(), f"shmget({key:#x}) failed")
        address = self._libc.shmat(self.id, None, 0)
        data = content.encode()
        ctypes.memmove(address, data, len(data))
        self._libc.shmdt(ctypes.c_void_p(address))

    def close(self) -> None:
        self._libc.shmctl(self.id, _IPC_RMID, None)
