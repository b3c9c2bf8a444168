#!/usr/bin/env python3
"""Fits the rational tanh of engine/src/cpu/kernels/math/vector_math_avx512.h
and checks it as float32 evaluates it.

tanh(x) / x ~ P(t) / Q(t), t = x^2, on 0 < x <= C (default 9, where tanh
rounds to 1 in float32), P of degree 6 and Q of degree 3 with Q(0) = 1:
Sanathanan-Koerner iterations of a linearized least-squares fit in the
scaled variable t / C^2, weighted toward the largest relative error
(Lawson), keeping the best fit whose Q stays positive. Prints the float32
coefficients (highest degree first, as poly() takes them) and the error of
the float32 evaluation (fused multiply-adds, the result clamped to [-1, 1])
against numpy's tanh in double over every 5th float between 3e-8 and 9.

    .venv/bin/python scripts/fit_tanh.py
"""
import argparse

import numpy as np


def fit(C, NP, NQ):
    x = np.concatenate([np.linspace(0, 1, 40000) ** 2 * C, np.geomspace(1e-4, C, 20000)])
    x = np.unique(x[x > 0])
    f = np.tanh(x) / x
    s = x * x / (C * C)
    V = lambda d: np.vander(s, d + 1, increasing=True)
    Qv, law, best = np.ones_like(s), np.ones_like(s), (np.inf, None)
    for it in range(200):
        w = law / (Qv * f)
        A = np.concatenate([V(NP), -(f[:, None]) * V(NQ)[:, 1:]], axis=1)
        sol, *_ = np.linalg.lstsq(A * w[:, None], f * w, rcond=None)
        p, q = sol[:NP + 1], np.concatenate([[1.0], sol[NP + 1:]])
        Qv = V(NQ) @ q
        err = np.abs((V(NP) @ p) / Qv - f) / f
        if err.max() < best[0] and (Qv > 0).all():
            best = (err.max(), (p.copy(), q.copy()))
        if it >= 20:
            law = law * (err / err.max()) ** 0.3
            law /= law.mean()
    e, (p, q) = best
    return e, p / (C * C) ** np.arange(NP + 1), q / (C * C) ** np.arange(NQ + 1)


def evaluate(x, pf, qf, C):
    f32 = np.float32
    fma = lambda a, b, c: (a.astype(np.float64) * b + c).astype(np.float32)
    a = np.minimum(f32(C), np.maximum(f32(-C), x))
    t = (a * a).astype(np.float32)
    P = np.full_like(t, pf[-1])
    for c in pf[-2::-1]:
        P = fma(P, t, c)
    Q = np.full_like(t, qf[-1])
    for c in qf[-2::-1]:
        Q = fma(Q, t, c)
    r = ((a * P).astype(np.float64) / Q).astype(np.float32)
    return np.minimum(f32(1), np.maximum(f32(-1), r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clamp", type=float, default=9.0)
    args = ap.parse_args()
    e, p, q = fit(args.clamp, 6, 3)
    pf, qf = p.astype(np.float32), q.astype(np.float32)
    print(f"max relative error in exact arithmetic: {e:.3g}")
    print("p:", ", ".join(f"{c:.9e}f" for c in pf[::-1]))
    print("q:", ", ".join(f"{c:.9e}f" for c in qf[::-1]))
    x = np.arange(0x33000000, 0x41100000, 5, dtype=np.uint32).view(np.float32)
    ref = np.tanh(x.astype(np.float64))
    ulps = np.abs(evaluate(x, pf, qf, args.clamp) - ref) / np.spacing(ref.astype(np.float32)).astype(np.float64)
    print(f"float32 evaluation over {len(x)} points: max {ulps.max():.2f} ulp at x = {x[ulps.argmax()]}, "
          f"mean {ulps.mean():.2f} ulp")


if __name__ == "__main__":
    main()
