"""A reader of torch's legacy checkpoint format (resemblyzer's ``pretrained.pt``) into numpy.

The file is five pickles (magic number, protocol version, system info, the object, the
storage keys) followed by each storage's raw bytes. Only the few classes such a checkpoint
names are allowed through the unpickler, so a crafted file cannot run code, and no torch is
needed to read it.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = 0x1950A86A20F9469CFC6C
PROTOCOL = 1001
MAX_BYTES = 64 * 1024 * 1024  # pretrained.pt is 17 MB; anything far larger is not it

DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ByteStorage": np.uint8,
}


class CheckpointError(ValueError):
    """The file is not a legacy torch checkpoint this reader understands."""


class _Storage:
    """A storage named in the pickle; filled with its bytes once they are read."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.data: np.ndarray | None = None


class _Tensor:
    """A tensor waiting for its storage: materialized to numpy after the storages."""

    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride

    def array(self) -> np.ndarray:
        data = self.storage.data
        if data is None:
            raise CheckpointError("a tensor's storage is missing from the file")
        item = data.itemsize
        if not self.size:
            return data[self.offset : self.offset + 1].reshape(()).copy()
        view = np.lib.stride_tricks.as_strided(
            data[self.offset :], shape=self.size, strides=[s * item for s in self.stride]
        )
        return np.array(view)


def _rebuild_tensor_v2(storage: _Storage, offset: int, size: tuple, stride: tuple, *_: Any):
    return _Tensor(storage, offset, tuple(size), tuple(stride))


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name = name


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, storages: dict[str, _Storage]) -> None:
        super().__init__(file)
        self.storages = storages

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_v2
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if module == "torch" and name in DTYPES:
            return _StorageType(name)
        raise CheckpointError(f"unexpected class in checkpoint: {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise CheckpointError(f"unexpected persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, _StorageType):
            raise CheckpointError(f"unexpected storage type {storage_type!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(DTYPES[storage_type.name])
        return self.storages[key]


def _materialize(obj: Any) -> Any:
    if isinstance(obj, _Tensor):
        return obj.array()
    if isinstance(obj, dict):
        return {k: _materialize(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_materialize(v) for v in obj)
    return obj


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The checkpoint's object with every tensor as a numpy array. Raises CheckpointError."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise CheckpointError(f"{path} is {size} bytes, more than a speaker encoder's weights")
    file = io.BytesIO(path.read_bytes())
    storages: dict[str, _Storage] = {}
    try:
        if pickle.load(file) != MAGIC or pickle.load(file) != PROTOCOL:
            raise CheckpointError(f"{path} is not a legacy torch checkpoint")
        pickle.load(file)  # system info (byte order, type sizes)
        obj = _Unpickler(file, storages).load()
        keys = pickle.load(file)
        for key in keys:
            (count,) = struct.unpack("<q", file.read(8))
            storage = storages[str(key)]
            raw = file.read(count * storage.dtype.itemsize)
            if len(raw) != count * storage.dtype.itemsize:
                raise CheckpointError(f"{path} ends inside storage {key}")
            storage.data = np.frombuffer(raw, dtype=storage.dtype)
    except CheckpointError:
        raise
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError, struct.error) as exc:
        raise CheckpointError(f"{path} is not a readable checkpoint: {exc}") from None
    return _materialize(obj)
