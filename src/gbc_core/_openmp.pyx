"""Whether OpenMP is compiled in, and how many threads the kernels use."""
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


def max_threads():
    """Threads OpenMP would use by default (honours ``OMP_NUM_THREADS``), at most the CPUs."""
    if not GBC_CORE_OPENMP_ENABLED:
        return 1
    n_cpus = os.cpu_count() or 1
    return max(1, min(omp_get_max_threads(), n_cpus))


def effective_n_threads(n_jobs):
    """Translate ``n_jobs`` into a thread count.

    ``None`` uses :func:`max_threads` (all cores, or ``OMP_NUM_THREADS``); a positive
    value is used as given; a negative value counts back from the number of CPUs as in
    joblib (``-1`` is all CPUs). Without OpenMP the result is always 1.
    """
    if n_jobs is not None:
        try:
            valid = not isinstance(n_jobs, bool) and int(n_jobs) == n_jobs and n_jobs != 0
        except (TypeError, ValueError, OverflowError):  # "2", NaN, inf, [1], ...
            valid = False
        if not valid:
            raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}")
        # Thousands of OpenMP threads exhaust the process/thread limits and crash
        # the runtime (a segfault, not an exception); the model loader uses the
        # same limit.
        limit = max(1024, os.cpu_count() or 1)
        if abs(int(n_jobs)) > limit:
            raise ValueError(f"n_jobs={n_jobs!r} is too large: |n_jobs| must be <= {limit}")
    if not GBC_CORE_OPENMP_ENABLED:
        return 1
    if n_jobs is None:
        return max_threads()
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return n_jobs
