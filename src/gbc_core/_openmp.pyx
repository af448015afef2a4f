"""Whether OpenMP is compiled in, and how many threads it would use (``n_jobs`` is
resolved by ``_params.effective_n_threads``)."""
import os

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
