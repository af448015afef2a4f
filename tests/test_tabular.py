"""The file readers and the atomic output of the batch commands (in process)."""

import io
import os

import numpy as np
import pytest

from conftest import require

from gbc_core._commands import Progress, draw_tree
from gbc_core._tabular import (
    AtomicOutput,
    DataError,
    LibsvmData,
    detect_format,
    parse_libsvm_lines,
)


def test_libsvm_parser_handles_comments_blank_lines_and_missing_indices():
    text = ["# a comment line\n", "1 1:0.5 3:-2e-1  # trailing comment\n", "\n",
            "-1 2:7\n", "0\n", "+1 4:1.25e3\t5:nan\n"]
    labels, row, col, value = parse_libsvm_lines(text)
    np.testing.assert_array_equal(labels, [1, -1, 0, 1])
    X = np.zeros((4, 5))
    X[row, col] = value
    expected = np.array([[0.5, 0, -0.2, 0, 0], [0, 7, 0, 0, 0], [0, 0, 0, 0, 0],
                         [0, 0, 0, 1250, np.nan]])
    np.testing.assert_array_equal(X, expected)


@pytest.mark.parametrize("line,words", [
    ("1 3:1 x\n", ["line 2", "'x'"]),
    ("1 0:1\n", ["line 2", "index 0", "1-based"]),
    ("1 2.5:1\n", ["line 2", "'2.5:1'"]),
    ("yes 1:1\n", ["line 2", "label 'yes'"]),
    ("1 qid:3 1:1\n", ["line 2", "qid"]),
    ("1 9:1\n", ["line 2", "index 9", "5 features"]),
    ("nan 1:1\n", ["line 2", "label 'nan'", "finite"]),
    ("1 1:1\u00a02:3\n", ["line 2", "not valid LIBSVM", "spaces or tabs"]),
])
def test_libsvm_errors_name_the_line(line, words):
    with pytest.raises(DataError) as err:
        parse_libsvm_lines(["1 1:1\n", line], n_features=5, path="f.svm")
    for w in words:
        assert w in str(err.value)


def test_libsvm_chunks_equal_whole_file_and_sklearn(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(1000):
        idx = np.sort(rng.choice(40, size=rng.integers(0, 8), replace=False)) + 1
        vals = rng.normal(size=idx.size)
        lines.append(f"{i % 2} " + " ".join(f"{j}:{v:.17g}" for j, v in zip(idx, vals)))
    path = tmp_path / "d.svm"
    path.write_text("\n".join(lines) + "\n")
    X, y = LibsvmData(path, n_features=40).read_all(chunk_rows=1000)
    parts = list(LibsvmData(path).iter_chunks(40, ["label"], 77, target="label"))
    assert [c.n_rows for c in parts][:2] == [77, 77]
    # The rows are sparse (CSR, float32), never densified.
    assert X.format == "csr" and X.dtype == np.float32
    assert all(c.X.format == "csr" and c.X.shape == (c.n_rows, 40) for c in parts)
    sparse = require("scipy.sparse")
    np.testing.assert_array_equal(sparse.vstack([c.X for c in parts]).toarray(), X.toarray())
    X = X.toarray()
    np.testing.assert_array_equal(np.concatenate([c.labels for c in parts]), y)
    # the kept label is the text of the file
    assert sum((c.columns["label"] for c in parts), []) == [ln.split()[0] for ln in lines]
    assert y.dtype == np.int64
    sk = require("sklearn.datasets")
    Xs, ys = sk.load_svmlight_file(str(path), n_features=40)
    np.testing.assert_array_equal(Xs.toarray().astype(np.float32), X)
    np.testing.assert_array_equal(ys, y)


def test_format_detection():
    assert detect_format("a/b.CSV") == "csv"
    assert detect_format("b.pq") == "parquet"
    assert detect_format("b.svmlight") == "libsvm"
    assert detect_format("b.csv.gz") == "csv"
    assert detect_format("agaricus.train", "svmlight") == "libsvm"
    with pytest.raises(DataError, match="--format"):
        detect_format("agaricus.train")


def test_atomic_output_commit_and_abort(tmp_path):
    target = tmp_path / "model.bin"
    target.write_bytes(b"old")
    out = AtomicOutput(target)
    out.write_bytes(b"new")
    out.abort()
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["model.bin"]
    out = AtomicOutput(target)
    out.write_bytes(b"new")
    out.commit()
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["model.bin"]


def test_progress_is_silent_unless_enabled():
    buf = io.StringIO()
    p = Progress(enabled=False, stream=buf)
    p.update(10)
    p.close()
    assert buf.getvalue() == ""
    assert not Progress.wanted(False, stream=buf)  # not a terminal
    p = Progress(enabled=True, total=20, stream=buf, interval=0)
    p.update(10)
    p.update(10)
    p.close()
    assert "20 rows" in buf.getvalue() and "100.0%" in buf.getvalue()


def test_draw_tree_one_line_per_node():
    from gbc_core import GradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=2, max_depth=2).fit(X, y)
    tree = model.trees()[0]
    text = draw_tree(tree, ["a", "b", "c"], 0.1).splitlines()
    assert len(text) == tree.shape[0]
    assert text[0].startswith("[0] ") and " <= " in text[0]
    assert text[1].startswith("|-- [") and text[-1].startswith("    `-- [")
