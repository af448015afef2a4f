from typing import TextIO, TypedDict

class _ConfigInfo(TypedDict):
    version: str
    openmp: bool
    threads: int
    predict_kernel: str
    python: str
    numpy: str

def show_config(file: TextIO | None = None) -> _ConfigInfo: ...
