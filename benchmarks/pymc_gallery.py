"""PyMC models of the kinds PyMC's example gallery has, for
benchmarks/bench_pymc.py (not a test). Each builder returns a ``pm.Model``
on synthetic data drawn with a fixed seed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def eight_schools(pm: Any) -> Any:
    """The non-centred eight schools model."""
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta_raw = pm.Normal("theta_raw", 0, 1, shape=8)
        pm.Normal("y", mu + tau * theta_raw, sigma, observed=y)
    return model


def radon(pm: Any) -> Any:
    """Varying intercepts and slopes over 85 counties, 900 rows."""
    rng = np.random.default_rng(1)
    county = rng.integers(0, 85, 900)
    floor = rng.integers(0, 2, 900).astype(float)
    y = rng.normal(1.5 - 0.6 * floor, 0.7)
    with pm.Model() as model:
        mu_a, mu_b = pm.Normal("mu_a", 0, 5), pm.Normal("mu_b", 0, 5)
        s_a, s_b = pm.HalfNormal("s_a", 1), pm.HalfNormal("s_b", 1)
        a = pm.Normal("a", mu_a, s_a, shape=85)
        b = pm.Normal("b", mu_b, s_b, shape=85)
        eps = pm.HalfNormal("eps", 1)
        pm.Normal("y", a[county] + b[county] * floor, eps, observed=y)
    return model


def logistic(pm: Any) -> Any:
    """Logistic regression, 1000 rows by 20 predictors."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 20))
    y = rng.random(1000) < 1 / (1 + np.exp(-X @ rng.normal(0, 0.5, 20)))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=20)
        alpha = pm.Normal("alpha", 0, 1)
        pm.Bernoulli("y", logit_p=alpha + pm.math.dot(X, beta), observed=y)
    return model


def stochastic_volatility(pm: Any) -> Any:
    """Stochastic volatility over 300 steps (a Gaussian random walk)."""
    rng = np.random.default_rng(3)
    returns = rng.standard_t(5, 300) * 0.02
    with pm.Model() as model:
        step = pm.Exponential("step", 10)
        vol = pm.GaussianRandomWalk("vol", sigma=step, shape=300, init_dist=pm.Normal.dist(0, 1))
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("r", nu=nu, lam=pm.math.exp(-2 * vol), observed=returns)
    return model


def mixture(pm: Any) -> Any:
    """A two-component normal mixture (logsumexp in the log-density)."""
    rng = np.random.default_rng(4)
    data = np.concatenate([rng.normal(-2, 1, 300), rng.normal(2, 1, 300)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        ordered = pm.distributions.transforms.ordered
        mu = pm.Normal("mu", 0, 5, shape=2, transform=ordered, initval=[-1.0, 1.0])
        pm.NormalMixture("y", w, mu, sigma=1.0, observed=data)
    return model


def lkj(pm: Any) -> Any:
    """A multivariate normal of dimension 3 with an LKJ prior on its Cholesky factor."""
    rng = np.random.default_rng(5)
    data = rng.multivariate_normal([0, 1, 2], [[1, 0.5, 0], [0.5, 1, 0.3], [0, 0.3, 1]], 200)
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3)
        )
        mu = pm.Normal("mu", 0, 5, shape=3)
        pm.MvNormal("y", mu, chol=chol, observed=data)
    return model


def gp(pm: Any) -> Any:
    """A latent Gaussian process on 40 points (ExpQuad) with a normal likelihood."""
    rng = np.random.default_rng(6)
    x = np.linspace(0, 10, 40)[:, None]
    y = np.sin(x[:, 0]) + rng.normal(0, 0.3, 40)
    with pm.Model() as model:
        ell = pm.Gamma("ell", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        latent = pm.gp.Latent(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ell))
        f = latent.prior("f", X=x)
        pm.Normal("y", f, 0.3, observed=y)
    return model


def garch(pm: Any) -> Any:
    """A GARCH(1,1) volatility over 200 returns, its recursion a Scan."""
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(7)
    returns = rng.standard_t(6, 200) * 0.01
    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 0.01)
        alpha = pm.Beta("alpha", 2, 8)
        beta = pm.Beta("beta", 8, 2)
        r = pt.as_tensor(returns)

        def variance(r_previous, s_previous, omega, alpha, beta):
            return omega + alpha * r_previous**2 + beta * s_previous

        s0 = pt.as_tensor(np.var(returns))
        s = pytensor.scan(
            variance,
            sequences=[r[:-1]],
            outputs_info=[s0],
            non_sequences=[omega, alpha, beta],
            return_updates=False,
        )
        pm.Normal("obs", 0.0, pt.sqrt(s), observed=returns[1:])
    return model


MODELS: dict[str, Callable[[Any], Any]] = {
    "eight_schools": eight_schools,
    "radon": radon,
    "logistic": logistic,
    "stochastic_volatility": stochastic_volatility,
    "mixture": mixture,
    "lkj": lkj,
    "gp": gp,
    "garch": garch,
}
