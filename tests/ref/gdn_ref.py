#!/usr/bin/python3
"""Independent numpy oracle for tests/test_gdn.c.

Written from the maths (Gated DeltaNet paper / llama.cpp semantics), in the
paper's convention S in R^{Dk x Dv}, o = S^T q, which is the transpose of the
[Dv][Dk] layout src/cpu/gdn.c keeps, so the two do not share index bookkeeping.
Run `/usr/bin/python3 tests/ref/gdn_ref.py` (the python with numpy) and paste the printed arrays into
tests/test_gdn.c (they are the EXP_* constants there).
"""
import numpy as np

np.set_printoptions(precision=9)


def fmt(name, a):
    a = np.asarray(a, dtype=np.float64).ravel()
    body = ", ".join("%.9g" % x for x in a)
    print("static const float %s[%d] = {%s};" % (name, a.size, body))


def silu(x):
    return x / (1.0 + np.exp(-x))


# ---- gated delta rule: T=3, H_k=1, H_v=2 (tiled), Dk=Dv=2 ----------------
T, HK, HV, D = 3, 1, 2, 2
q = np.array([[[0.6, 0.8]], [[1.0, 0.0]], [[0.0, -1.0]]])           # [T][HK][D], unit norm
k = np.array([[[0.8, -0.6]], [[0.28, 0.96]], [[-0.6, 0.8]]])        # unit norm
v = np.array([[[1.0, 2.0], [-0.5, 0.25]],
              [[0.5, -1.0], [2.0, 1.0]],
              [[-1.5, 0.75], [0.0, 3.0]]])                           # [T][HV][D]
g = np.array([[-0.1, -0.5], [-0.2, 0.0], [-1.0, -0.05]])             # [T][HV]
beta = np.array([[0.5, 0.9], [0.25, 1.0], [0.75, 0.1]])
# initial state in paper layout S0[h][i (key)][j (value)]
S0 = np.array([[[0.1, -0.2], [0.3, 0.4]], [[-0.5, 0.0], [0.25, 0.125]]])

S = S0.copy()
out = np.zeros((T, HV, D))
for t in range(T):
    for h in range(HV):
        hk = h % HK
        kk, qq, vv = k[t, hk], q[t, hk], v[t, h]
        Sh = S[h] * np.exp(g[t, h])
        delta = (vv - Sh.T @ kk) * beta[t, h]
        Sh = Sh + np.outer(kk, delta)
        S[h] = Sh
        out[t, h] = Sh.T @ qq / np.sqrt(D)

print("/* gated delta rule */")
fmt("EXP_GDN_OUT", out)                        # [T][HV][D]
fmt("EXP_GDN_STATE", np.transpose(S, (0, 2, 1)))  # zinc layout [HV][Dv][Dk]

# ---- conv1d + silu: C=3 channels, K=4, T=5, non-zero initial state -------
C, K, TC = 3, 4, 5
w = np.array([[0.5, -0.25, 0.125, 1.0], [0.0, 0.3, -0.7, 0.2], [1.0, 1.0, 1.0, 1.0]])  # [C][K]
st = np.array([[0.1, 0.2, 0.3], [-1.0, 0.5, 0.0], [0.25, -0.25, 0.5]])              # [C][K-1]
x = np.array([[1.0, -2.0, 0.5], [0.0, 1.5, -1.0], [2.0, 0.25, 0.75],
              [-0.5, -1.0, 1.0], [0.3, 0.6, -0.9]])                                  # [T][C]
y = np.zeros((TC, C))
for c in range(C):
    xin = np.concatenate([st[c], x[:, c]])
    for t in range(TC):
        y[t, c] = silu(np.dot(w[c], xin[t:t + K]))
new_state = np.stack([np.concatenate([st[c], x[:, c]])[-(K - 1):] for c in range(C)])
print("/* conv1d + silu */")
fmt("EXP_CONV_Y", y)
fmt("EXP_CONV_STATE", new_state)

# ---- L2 norm (x / sqrt(sum x^2 + eps)) and gated RMSNorm -----------------
xn = np.array([3.0, -4.0, 0.0, 12.0])
print("/* l2 norm, eps = 1e-6 */")
fmt("EXP_L2", xn / np.sqrt(np.sum(xn ** 2) + 1e-6))

xg = np.array([[1.0, -2.0, 3.0], [0.5, 0.5, -0.5]])   # [H][d]
zg = np.array([[0.0, 1.0, -1.0], [2.0, -3.0, 0.5]])
wg = np.array([1.0, 0.5, -2.0])
rms = np.sqrt(np.mean(xg ** 2, axis=1, keepdims=True) + 1e-5)
print("/* gated rmsnorm, eps = 1e-5 */")
fmt("EXP_GRMS", xg / rms * wg * silu(zg))

# ---- gates -----------------------------------------------------------------
alpha = np.array([0.5, -3.0, 25.0])
dt = np.array([0.25, 1.0, -2.0])
a = np.array([-1.5, -0.1, -0.01])
br = np.array([0.0, 2.0, -1.0])
s = alpha + dt
sp = np.where(s > 20, s, np.log1p(np.exp(np.minimum(s, 20))))
print("/* gates */")
fmt("EXP_G", sp * a)
fmt("EXP_BETA", 1 / (1 + np.exp(-br)))

# ---- IMRoPE: head_dim 14, n_dims 12 (6 pairs), sections [1,1,1,1] ---------
# component of pair i: sector = i % 4 -> t, h, w, e, t, h (Qwen3-VL interleave)
comp = [0, 1, 2, 3, 0, 1]
pos = np.array([3, 5, 7, 2])
n_dims, hd = 12, 14
xr = np.arange(1, 2 * hd + 1, dtype=np.float64).reshape(2, hd) / 10.0  # 2 heads
base = 10000.0
yr = xr.copy()
half = n_dims // 2
for i in range(half):
    th = pos[comp[i]] * base ** (-2.0 * i / n_dims)
    c, s_ = np.cos(th), np.sin(th)
    x0, x1 = xr[:, i], xr[:, i + half]
    yr[:, i] = x0 * c - x1 * s_
    yr[:, i + half] = x0 * s_ + x1 * c
print("/* imrope */")
fmt("EXP_ROPE", yr)
