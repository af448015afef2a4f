"""Whether OpenMP is compiled in, and how many threads it would use (``n_jobs`` is
resolved by ``_params.effective_n_threads``); the trace of the parallel regions in a
build with ``GBC_CORE_TRACE=1`` (``_trace.h``)."""
import os

import numpy as np

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define GBC_CORE_OPENMP_ENABLED 1
    #else
    #define GBC_CORE_OPENMP_ENABLED 0
    static int omp_get_max_threads(void) { return 1; }
    #endif
    """
    int GBC_CORE_OPENMP_ENABLED
    int omp_get_max_threads() nogil


def openmp_enabled():
    """Return True if the extension modules were built with OpenMP."""
    return bool(GBC_CORE_OPENMP_ENABLED)


#: CPUs of the machine (read once: a prediction asks for it on every call).
_CPU_COUNT = os.cpu_count() or 1


def cpu_count():
    """The number of CPUs of the machine."""
    return _CPU_COUNT


def max_threads():
    """Threads OpenMP would use by default (honours ``OMP_NUM_THREADS`` and limits set
    at run time, e.g. by threadpoolctl), at most the CPUs."""
    if not GBC_CORE_OPENMP_ENABLED:
        return 1
    return max(1, min(omp_get_max_threads(), _CPU_COUNT))


cdef extern from *:
    """
    #define GBC_TRACE_OWNER 1
    #include "_trace.h"
    """
    int GBC_TRACE_COMPILED
    object gbc_trace_capsule()
    int gbc_trace_start(long long capacity) nogil
    void gbc_trace_stop() nogil
    int gbc_trace_n_slots() nogil
    long long gbc_trace_slot_n(int i) nogil
    long long gbc_trace_slot_dropped(int i) nogil
    void gbc_trace_slot_copy(int i, char* out) nogil


#: The events of ``trace_stop``: wall times t0, t1 in ns (CLOCK_MONOTONIC), the
#: thread's CPU times c0, c1 in ns; kind 0 a task (id its phase, index its task), 1 a
#: region (id the region, index its items).
TRACE_DTYPE = np.dtype([("t0", np.int64), ("t1", np.int64), ("c0", np.int64),
                        ("c1", np.int64), ("index", np.int64),
                        ("kind", np.int32), ("id", np.int32), ("slot", np.int32),
                        ("tid", np.int32)])

#: The other modules' handle on the trace buffers (None in a normal build).
_trace_capsule = gbc_trace_capsule()


def trace_compiled():
    """Return True if the extension modules were built with ``GBC_CORE_TRACE=1``."""
    return bool(GBC_TRACE_COMPILED)


def trace_start(capacity=1 << 22):
    """Start recording the parallel regions and their tasks, ``capacity`` events per
    thread (earlier events are dropped). Raises RuntimeError in a normal build."""
    if not GBC_TRACE_COMPILED:
        raise RuntimeError("gbc_core was built without the trace; rebuild with "
                           "GBC_CORE_TRACE=1 in the environment to record one")
    if gbc_trace_start(int(capacity)) != 0:
        raise MemoryError("cannot allocate the trace buffers")


def trace_stop():
    """Stop recording; return the events (``TRACE_DTYPE``, sorted by start time) and
    the number dropped because a thread's buffer was full."""
    if not GBC_TRACE_COMPILED:
        raise RuntimeError("gbc_core was built without the trace; rebuild with "
                           "GBC_CORE_TRACE=1 in the environment to record one")
    gbc_trace_stop()
    parts, dropped = [], 0
    cdef int i
    for i in range(gbc_trace_n_slots()):
        part = np.empty(gbc_trace_slot_n(i), dtype=TRACE_DTYPE)
        if len(part):
            gbc_trace_slot_copy(i, <char*><size_t>part.ctypes.data)
        parts.append(part)
        dropped += gbc_trace_slot_dropped(i)
    events = np.concatenate(parts) if parts else np.empty(0, dtype=TRACE_DTYPE)
    return np.sort(events, order="t0"), int(dropped)
