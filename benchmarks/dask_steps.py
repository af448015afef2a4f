"""All-reduce steps and bytes per tree of a distributed fit, by tree shape.

One rank of a data-parallel fit (``_distributed.PartTrainer``) on 100,000 rows of
the data of ``dask_training.py``, with a one-process ``comm`` that counts its calls
and the bytes it is handed: every rank of a real fit makes the same calls. Per tree
= (steps of 11 trees - steps of 1 tree) / 10, binary log-loss, 28 features, 255
bins. No Dask needed.

    python benchmarks/dask_steps.py
"""

import numpy as np

from dask_training import make_block

from gbc_core._binning import BinMapper
from gbc_core._distributed import PartTrainer, bin_parts
from gbc_core._params import DEFAULTS, check_params, resolve

SHAPES = {
    "depth 3": dict(max_depth=3),
    "depth 3, min_impurity_decrease and ccp_alpha": dict(
        max_depth=3, min_impurity_decrease=1e-4, ccp_alpha=1e-5),
    "31 leaves best first": dict(max_depth=None, max_leaf_nodes=31),
    "31 leaves best first, min_impurity_decrease and ccp_alpha": dict(
        max_depth=None, max_leaf_nodes=31, min_impurity_decrease=1e-4, ccp_alpha=1e-5),
}


class CountingComm:
    """A one-process all-reduce that counts its calls and bytes."""

    def __init__(self):
        self.steps = 0
        self.bytes = 0

    def allreduce(self, values, n_summed):
        self.steps += 1
        self.bytes += np.asarray(values).nbytes
        return np.array(values, dtype=np.float64, copy=True)


def main():
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args()  # --help; no options
    X, y = make_block(0, 100_000, 28, 0)
    mapper = BinMapper(255).fit(np.asfortranarray(X), 1)
    bins, lo, hi = bin_parts([X], mapper, 1)
    print("| trees | all-reduce steps per tree | bytes per tree (each rank) |")
    print("|---|---|---|")
    for name, shape in SHAPES.items():
        counts = []
        for m in (1, 11):
            params = check_params(dict(DEFAULTS, split_method="hist", n_estimators=m,
                                       learning_rate=0.1, **shape))
            resolved = resolve(params, X.shape[0], X.shape[1], float(X.shape[0]))
            trainer = PartTrainer(bins, mapper.n_bins_non_missing, mapper.missing_bin, y,
                                  None, np.arange(X.shape[0]), X.shape[0])
            comm = CountingComm()
            trainer.fit(comm, 2, resolved, 0, lo, hi)
            counts.append((comm.steps, comm.bytes))
        steps = (counts[1][0] - counts[0][0]) / 10
        nbytes = (counts[1][1] - counts[0][1]) / 10
        print(f"| {name} | {steps:g} | {nbytes / 1e6:.2f} MB |")


if __name__ == "__main__":
    main()
