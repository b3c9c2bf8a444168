#!/usr/bin/env python3
"""Fits the polynomials of the reference's erf (engine/src/reference/ops/math/
exp_f64.cpp, erf_by_exp) and checks the double evaluation against mpmath.

    erf(x) = x * P(2 x^2 - 1)                          for |x| < 1
    erf(x) = sign(x) (1 - exp(-x^2) * Q((2 |x| - 5) / 3))   for 1 <= |x| < 4
    erf(x) = sign(x)                                    for |x| >= 4

P (degree 12) fits erf(x) / x over x^2 in [0, 1], Q (degree 24) fits
exp(x^2) erfc(x) over [1, 4]: least squares at Chebyshev nodes in mpmath,
coefficients rounded to double (lowest degree first, as the C++ Horner loop
takes them from the end). erf(4) is 1 - 1.5e-8, which rounds to 1 in
float32: the reference uses this erf for float32 inputs only.

Prints the coefficients, then evaluates the algorithm in numpy double (the
C++'s operations in its order, no fused multiply-adds) on random float32
values and reports the largest error in double ulps and how often the
float32 rounding differs from mpmath's correctly rounded erf.

    .venv/bin/python scripts/fit_erf.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 50


def fit(f, a, b, deg, n=400):
    nodes = [mp.cos(mp.pi * (k + mp.mpf(0.5)) / n) for k in range(n)]
    A = mp.matrix([[s ** j for j in range(deg + 1)] for s in nodes])
    y = mp.matrix([f((s + 1) / 2 * (b - a) + a) for s in nodes])
    c = mp.lu_solve(A.T * A, A.T * y)
    return [float(c[j]) for j in range(deg + 1)]


def horner(c, s):
    r = np.zeros_like(s) + c[-1]
    for j in range(len(c) - 2, -1, -1):
        r = r * s + c[j]
    return r


def erf_model(x, P, Q):
    from math import ldexp  # noqa: F401 (numpy's exp is within an ulp, as the C++ exp)
    a = np.abs(x)
    u = a * a
    small = x * horner(P, 2.0 * u - 1.0)
    mid = 1.0 - np.exp(-u) * horner(Q, (2.0 * a - 5.0) / 3.0)
    r = np.where(a < 1, small, np.copysign(np.where(a < 4, mid, 1.0), x))
    return np.where(np.isnan(x), x, r)


def main():
    f1 = lambda u: mp.erf(mp.sqrt(u)) / mp.sqrt(u) if u > 0 else 2 / mp.sqrt(mp.pi)
    g = lambda x: mp.exp(x * x) * mp.erfc(x)
    P = fit(f1, 0, 1, 12)
    Q = fit(g, 1, 4, 24)
    for name, c in (("kErfSmall", P), ("kErfcxMid", Q)):
        print(f"constexpr double {name}[{len(c)}] = {{")
        print(",\n".join("    " + ", ".join(f"{v:.17g}" for v in c[i:i + 3]) for i in range(0, len(c), 3)) + "};")
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-4.5, 4.5, 200000), rng.uniform(-1, 1, 100000), rng.uniform(0.9, 1.1, 50000),
                        rng.uniform(3.8, 4.1, 50000), np.geomspace(1e-30, 1, 20000)]).astype(np.float32).astype(np.float64)
    got = erf_model(x, P, Q)
    true = np.array([mp.erf(mp.mpf(float(v))) for v in x], dtype=object)
    true_d = np.array([float(t) for t in true])
    ulp = np.abs(got - true_d) / np.spacing(np.abs(true_d))
    inside = np.abs(x) < 4  # past 4 the result is +-1, the float32 rounding of erf there
    want32 = true_d.astype(np.float32)  # double rounding of mpmath -> double -> float: within the check's resolution
    print(f"{x.size} values: largest error below |x| = 4 {ulp[inside].max():.2f} double ulps; float32 results "
          f"differing from the correctly rounded erf: {(got.astype(np.float32) != want32).sum()}")


if __name__ == "__main__":
    main()
