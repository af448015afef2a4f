"""The input rules of the batch commands (docs/reliability.md, "Input rules").

What the user gives passes through unchanged or is an error naming what is wrong;
every valid file is read, whatever its size; an output never replaces an input.
Every file is written by the test; sizes span one CSV block (1 MiB) and several.
"""

import csv
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402
from gbc_core._atomic import TEMPORARY_TAG  # noqa: E402
from gbc_core._tabular import (  # noqa: E402
    CSV_BLOCK_SIZE,
    DataError,
    LibsvmData,
    TableData,
    parse_libsvm_lines,
)

ERROR_PREFIX = "gbc-core: error: "
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and links")

#: Rows of the files: a few, some thousands (one CSV block) and enough for several
#: blocks (a value that differs from the first block's comes after the first MiB).
SIZES = [3, 2_000, 120_000]


# -------------------------------------------------------------------- helpers
def run_main(capsys, monkeypatch, cwd, *args):
    """``gbc_core.cli.main(ARGS)`` in this process: (exit code, stdout, stderr)."""
    from gbc_core.cli import main

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def expect_error(capsys, monkeypatch, cwd, *args, words=()):
    """Run a command that must fail with one line naming ``words``; return the line."""
    rc, out, err = run_main(capsys, monkeypatch, cwd, *args)
    lines = err.strip().splitlines()
    assert rc == 1, (args, rc, err)
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not [p for p in os.listdir(cwd) if p.endswith(".tmp")]
    return lines[0]


def write_csv(path, header, rows, newline="\n"):
    """Write rows of text exactly (quoted by the csv module only where needed)."""
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator=newline)
        writer.writerow(header)
        writer.writerows(rows)


def read_csv_text(path):
    """A CSV file as {column: [text, ...]}, parsed by Python's csv module."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return {name: [r[j] for r in rows[1:]] for j, name in enumerate(rows[0])}


def features_frame(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32).astype(np.float64)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) > 0).astype(np.int64)
    return X, y


@pytest.fixture(scope="module")
def named_model(tmp_path_factory):
    """A model with the features x0, x1, x2 (classes 0, 1), saved as model.gbc."""
    pd = pytest.importorskip("pandas")
    X, y = features_frame(3000, 0)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    model = GradientBoostingClassifier(n_estimators=8, max_depth=3).fit(frame, y)
    path = tmp_path_factory.mktemp("model") / "model.gbc"
    model.save(path)
    return path


def proba_of(model_path, X):
    pd = pytest.importorskip("pandas")
    model = gbc_core.load(model_path)
    frame = pd.DataFrame(np.asarray(X, dtype=np.float64), columns=list(model.feature_names_in_))
    return model.predict_proba(frame)[:, 1]


def table_rows(n, seed, ids):
    """Rows id, x0, x1, x2 (text) and the features as numbers."""
    X, _ = features_frame(n, seed)
    rows = [[ids[i]] + [repr(float(v)) for v in X[i]] for i in range(n)]
    return rows, X


def awkward_ids(n):
    """Ids that look like numbers for all rows but a last stretch of text that a type
    inference would change: leading zeros, empty, NA, spaces, quotes, commas..."""
    ids = [f"{i:06d}" for i in range(n)]
    tail = ["null", "nan", " 7 ", "1e5", "0x1F", "3.10", "-0", "+1", "TRUE", "a,b",
            'say "hi"', "2024-01-01", f"A{n}", "NA", "", "000123"]
    ids[-min(n, len(tail)):] = tail[-n:]
    return ids


# --------------------------------------------- 5. LIBSVM repeated feature index
@pytest.mark.parametrize("line,index", [("1 1:0.5 1:5.0", 1), ("0 2:1 1:0.5 2:3", 2),
                                        ("1 3:1 7:2 3:1", 3), ("-1 4:0 04:0", 4)])
def test_libsvm_repeated_index_is_an_error(line, index):
    with pytest.raises(DataError) as err:
        parse_libsvm_lines(["1 1:1 2:2\n", "# comment\n", line + "\n"], path="f.svm")
    assert str(err.value).startswith(f"f.svm: line 3: feature index {index} is given twice")
    # unsorted indices without a repeat are fine
    labels, row, col, value = parse_libsvm_lines(["1 3:1 1:2 2:3\n"])
    assert col.tolist() == [2, 0, 1] and value.tolist() == [1, 2, 3]


@pytest.mark.parametrize("n", [5, 10_000, 50_000])
def test_libsvm_repeated_index_in_a_file(tmp_path, capsys, monkeypatch, n):
    lines = [f"{i % 2} 1:{i} 2:0.5 3:1" for i in range(n)]
    bad = n - 2
    lines[bad] = "1 1:0.5 3:2 1:5.0"
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"line {bad + 1}: feature index 1 is given twice"):
        LibsvmData(tmp_path / "d.svm").read_all(chunk_rows=4096)
    for args in (["train", "d.svm", "-o", "m.gbc"],
                 ["evaluate", "m.gbc", "d.svm"]):
        if args[0] == "evaluate":
            rng = np.random.default_rng(0)
            Xl = rng.normal(size=(50, 3))
            GradientBoostingClassifier(n_estimators=2).fit(Xl, Xl[:, 0] > 0).save(
                tmp_path / "m.gbc")
        expect_error(capsys, monkeypatch, tmp_path, *args,
                     words=["d.svm", f"line {bad + 1}", "feature index 1", "twice"])
    expect_error(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.svm", "-o", "o.csv",
                 "--chunk-rows", "1000", words=[f"line {bad + 1}", "index 1"])
    assert not (tmp_path / "o.csv").exists()


# --------------------------------------------------------- 6. predict --drop
def test_drop_of_a_missing_column_is_an_error(tmp_path, capsys, monkeypatch, named_model):
    rows, _ = table_rows(20, 12, [str(i) for i in range(20)])
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2"], rows)
    for command in (["predict", named_model, "d.csv", "-o", "o.csv"],
                    ["evaluate", named_model, "d.csv", "--target", "id"],
                    ["train", "d.csv", "--target", "id", "-o", "m.gbc"]):
        expect_error(capsys, monkeypatch, tmp_path, *command, "--drop", "x0", "no_such",
                     words=["--drop", "'no_such'", "d.csv"])
    assert sorted(os.listdir(tmp_path)) == ["d.csv"]
    (tmp_path / "d.svm").write_text("1 1:1\n")
    expect_error(capsys, monkeypatch, tmp_path, "predict", named_model, "d.svm", "-o", "o.csv",
                 "--drop", "x0", words=["--drop", "LIBSVM"])


# ------------------------------------------- 7. an output never replaces an input
@pytest.fixture
def inputs(tmp_path, named_model):
    rows, _ = table_rows(300, 13, [str(i) for i in range(300)])
    rows = [r + [str(i % 2)] for i, r in enumerate(rows)]
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2", "y"], rows)
    write_csv(tmp_path / "e.csv", ["id", "x0", "x1", "x2", "y"], rows[:100])
    (tmp_path / "m.gbc").write_bytes(named_model.read_bytes())
    return {name: (tmp_path / name).read_bytes() for name in ("d.csv", "e.csv", "m.gbc")}


def _unchanged(tmp_path, inputs, extra=()):
    for name, content in inputs.items():
        assert (tmp_path / name).read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == sorted(list(inputs) + list(extra))


@posix_only
@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "dotted"])
def test_output_that_is_an_input_is_refused(tmp_path, capsys, monkeypatch, inputs, alias):
    cases = [  # (command, the input the output names)
        (["train", "d.csv", "--target", "y", "-o", "{}"], "d.csv"),
        (["train", "d.csv", "--target", "y", "--eval", "e.csv", "-o", "{}"], "e.csv"),
        (["predict", "m.gbc", "d.csv", "--output-format", "csv", "-o", "{}"], "m.gbc"),
        (["predict", "m.gbc", "d.csv", "-o", "{}"], "d.csv"),
        (["predict", "m.gbc", "d.csv", "--output-format", "parquet", "-o", "{}"], "d.csv"),
    ]
    extra = []
    for command, target in cases:
        if alias == "same":
            output = target
        elif alias == "dotted":
            output = os.path.join(".", "sub", "..", target)
            (tmp_path / "sub").mkdir(exist_ok=True)
            extra = ["sub"]
        else:
            output = f"{alias}-{target}"
            if not (tmp_path / output).exists():
                if alias == "symlink":
                    (tmp_path / output).symlink_to(tmp_path / target)
                else:
                    os.link(tmp_path / target, tmp_path / output)
                extra.append(output)
        args = [a.format(output) if a == "{}" else a for a in command]
        line = expect_error(capsys, monkeypatch, tmp_path, *args,
                            words=["same file", output, target])
        assert line.count(target) >= 1 and "choose another output" in line
        _unchanged(tmp_path, inputs, extra)


def test_output_beside_the_input_is_fine(tmp_path, capsys, monkeypatch, inputs):
    """A copy of an input (another file with the same bytes) may be replaced."""
    (tmp_path / "copy.csv").write_bytes(inputs["d.csv"])
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o",
                          "copy.csv")
    assert rc == 0, err
    assert read_csv_text(tmp_path / "copy.csv").keys() == {"proba"}


# ---------------------------------------------- 8. permissions and temporaries
@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_predict_and_train_keep_the_output_mode(tmp_path, capsys, monkeypatch, inputs, mode):
    for command, output in ((["predict", "m.gbc", "d.csv", "-o"], "o.csv"),
                            (["train", "d.csv", "--target", "y", "--n-estimators", "2",
                              "-o"], "new.gbc")):
        (tmp_path / output).write_bytes(b"old")
        os.chmod(tmp_path / output, mode)
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, *command, output)
        assert rc == 0, err
        assert stat.S_IMODE((tmp_path / output).stat().st_mode) == mode
        assert (tmp_path / output).read_bytes() != b"old"


@posix_only
@pytest.mark.parametrize("mode", [0o444, 0o400, 0o040])
def test_read_only_output_is_not_replaced(tmp_path, capsys, monkeypatch, inputs, mode):
    for command, output in ((["predict", "m.gbc", "d.csv", "-o"], "o.csv"),
                            (["train", "d.csv", "--target", "y", "-o"], "new.gbc")):
        (tmp_path / output).write_bytes(b"old")
        os.chmod(tmp_path / output, mode)
        expect_error(capsys, monkeypatch, tmp_path, *command, output,
                     words=["cannot write", output, "read-only"])
        os.chmod(tmp_path / output, 0o600)
        assert (tmp_path / output).read_bytes() == b"old"
    _unchanged(tmp_path, inputs, ["o.csv", "new.gbc"])


def test_killed_run_leaves_a_temporary_file_the_next_run_removes(tmp_path, named_model):
    n = 400_000
    X, _ = features_frame(n, 14)
    pq.write_table(pa.table({"id": np.arange(n)} | {f"x{j}": X[:, j] for j in range(3)}),
                   tmp_path / "big.parquet", row_group_size=20_000)
    (tmp_path / "out.parquet").write_bytes(b"old")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gbc_core", "predict", str(named_model), "big.parquet", "-o",
         "out.parquet", "--keep", "id", "--chunk-rows", "10"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pattern = re.compile(rf"\.out\.parquet{re.escape(TEMPORARY_TAG)}{proc.pid}-[0-9a-f]+\.tmp")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(pattern.fullmatch(p) for p in os.listdir(tmp_path)):
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = [p for p in os.listdir(tmp_path) if pattern.fullmatch(p)]
    assert len(left) == 1  # the killed run's, recognisable by name
    assert (tmp_path / "out.parquet").read_bytes() == b"old"
    proc = subprocess.run(
        [sys.executable, "-m", "gbc_core", "predict", str(named_model), "big.parquet", "-o",
         "out.parquet", "--keep", "id"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["big.parquet", "out.parquet"]
    assert pq.read_table(tmp_path / "out.parquet").num_rows == n
