import numpy as np

import tinylib


def test_score_is_finite():
    table = {name: np.linspace(-1.0, 1.0, 16, dtype=np.float32) for name in tinylib.WEIGHTS}
    assert np.isfinite(tinylib.score(table)).all()


def test_normalize_centres():
    x = np.arange(32, dtype=np.float32)
    assert abs(float(tinylib.normalize(x).mean())) < 1e-5


def test_normalize_any_length():
    rng = np.random.default_rng()  # unseeded: another length each session
    x = rng.normal(size=int(rng.integers(8, 64))).astype(np.float32)
    assert abs(float(tinylib.normalize(x).mean())) < 1e-4
