#!/usr/bin/env python3
"""Fits the cpu engine's float32 erf (engine/src/cpu/kernels/math/erf_fit.h) and checks
it as the kernels evaluate it (vector_math_avx512.h, vector_math_avx2.h).

Two pieces, split at S = 0.921875:
  * a < S:  erf(a) = a P(a^2), P of degree 5 fitted to erf(a) / a for least
    relative error;
  * S <= a: erf(a) = 1 - e^-g, g = a + a Q(a), Q of degree 6 fitted to
    -log(erfc a) / a - 1 on [S, U] for least absolute error of g (an error
    d in g is a relative error d of erfc a, which is below 0.2 there); a is
    held to U = 3.925, where e^-g is below half an ulp of 1.
Both are least-squares fits on Chebyshev nodes reweighted toward the
largest error (Lawson's iteration), in double against mpmath's erf/erfc,
then rounded to float32. The check evaluates the float32 arithmetic of the
kernels (fused multiply-adds, e^-g as erf_fit.h computes it) over [0, 4.5] and tiny arguments, against mpmath.

    .venv/bin/python scripts/fit_erf_f32.py
"""
import argparse

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32
S, U = 0.921875, 3.925
# e^r as erf_fit.h's kExp (the AVX2 sigmoid's), highest degree first; ln2 as kLn2.
EXP_POLY = [8.3125280e-3, 4.1890118e-2, 1.6667114e-1, 4.9999231e-1, 1.0, 1.0]
LN2 = 0.693147181


def lawson(x, target, degree, weight, iterations=200):
    A = np.vander(x, degree + 1, increasing=True)
    w = np.ones_like(x)
    for _ in range(iterations):
        sw = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(A * sw[:, None], target * sw, rcond=None)
        err = np.abs((A @ c - target) * weight)
        w = w * err
        w /= w.sum()
    return c[::-1], err.max()  # highest degree first, as poly() takes them


def chebyshev_nodes(lo, hi, n=400):
    return lo + (hi - lo) * (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n))


def fit_small(degree):
    a = chebyshev_nodes(0.0, S)
    t = np.array([float(mp.erf(v) / v) for v in a])
    return lawson(a * a, t, degree, 1 / t)


def fit_big(degree):
    a = chebyshev_nodes(S, U)
    t = np.array([float(-mp.log(mp.erfc(v)) / v - 1) for v in a])
    return lawson(a, t, degree, a)


def fma(a, b, c):  # float32 fused multiply-add: the product of two floats is exact in double
    return f32(float(a) * float(b) + float(c))


def horner(c, x):
    p = f32(c[0])
    for k in c[1:]:
        p = fma(p, x, f32(k))
    return p


def erf32(x, small, big):
    a = f32(abs(x))
    if a < f32(S):
        return f32(a * horner(small, f32(a * a)))
    a = min(f32(U), a)
    ng = f32(-fma(horner(big, a), a, a))  # -g
    magic = f32(12582912.0)
    n = f32(fma(ng, f32(1.44269504088896341), magic) - magic)
    r = fma(-n, f32(LN2), ng)
    e = f32(horner([f32(c) for c in EXP_POLY], r) * f32(2.0 ** int(n)))
    return f32(f32(1) - e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small-degree", type=int, default=5)
    ap.add_argument("--big-degree", type=int, default=6)
    args = ap.parse_args()
    small, es = fit_small(args.small_degree)
    big, eb = fit_big(args.big_degree)
    small, big = [f32(c) for c in small], [f32(c) for c in big]
    print(f"P (degree {args.small_degree}): fit's relative error {es:.3g}")
    print("  {" + ", ".join(f"{c:.9e}f" for c in small) + "}")
    print(f"Q (degree {args.big_degree}): fit's absolute error in g {eb:.3g}")
    print("  {" + ", ".join(f"{c:.9e}f" for c in big) + "}")
    rng = np.random.default_rng(0)
    xs = np.concatenate([np.linspace(0, 4.5, 100001), rng.uniform(0, 4, 20000), np.geomspace(1e-30, 1, 1000)]).astype(f32)
    worst_ulp, worst_rel, at = 0.0, 0.0, None
    for x in xs:
        y, w = float(erf32(x, small, big)), float(mp.erf(mp.mpf(float(x))))
        if w == 0:
            continue
        rel = abs(y - w) / w
        worst_ulp = max(worst_ulp, abs(y - w) / float(np.spacing(f32(w))))
        if rel > worst_rel:
            worst_rel, at = rel, x
    print(f"float32 evaluation over {len(xs)} arguments: within {worst_ulp:.2f} ulp, "
          f"largest relative error {worst_rel:.3g} (at {at!r})")


if __name__ == "__main__":
    main()
