from collections.abc import Iterable

class FitRecord:
    train_score: list[float] | None
    validation_score: list[float] | None
    oob_scores: list[float] | None
    oob_improvement: list[float] | None
    best_iteration: int | None
    evals: dict[str, dict[str, list[float]]] | None
    def __init__(
        self,
        train_score: Iterable[float] | None = (),
        validation_score: Iterable[float] | None = None,
        oob_scores: Iterable[float] | None = None,
        oob_improvement: Iterable[float] | None = None,
        best_iteration: int | None = None,
        evals: dict[str, dict[str, list[float]]] | None = None,
    ) -> None: ...
