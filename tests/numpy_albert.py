"""An independent NumPy ALBERT forward pass over Google-named weights, for layout tests.

Written from the layout in Google's checkpoints (not from albert_tf's layers): layer i uses
group int(i / L * G), runs that group's inner groups in order; post-LN blocks; tanh GELU.
"""

import math

import numpy as np


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def forward(w, cfg, input_ids, input_mask, segment_ids, attention_group=None, ffn_group=None):
    """Returns (per-block outputs, pooled). attention_group/ffn_group map layer → stored group
    index (default Google's contiguous map); weights `w` are in float64."""
    L, G, K = cfg["num_hidden_layers"], cfg["num_hidden_groups"], cfg["inner_group_num"]
    H, N = cfg["hidden_size"], cfg["num_attention_heads"]
    D = H // N
    default = lambda i: int(i / L * G)
    attention_group = attention_group or default
    ffn_group = ffn_group or default
    e = "bert/embeddings/"
    T = input_ids.shape[1]
    x = w[e + "word_embeddings"][input_ids] + w[e + "token_type_embeddings"][segment_ids]
    x = x + w[e + "position_embeddings"][:T][None]
    x = layer_norm(x, w[e + "LayerNorm/gamma"], w[e + "LayerNorm/beta"])
    m = "bert/encoder/embedding_hidden_mapping_in/"
    if m + "kernel" in w:
        x = x @ w[m + "kernel"] + w[m + "bias"]
    adder = (1.0 - input_mask[:, None, None, :].astype(np.float64)) * -10000.0
    outs = []
    B = x.shape[0]
    for i in range(L):
        for k in range(K):
            pa = f"bert/encoder/transformer/group_{attention_group(i)}/inner_group_{k}/"
            pf = f"bert/encoder/transformer/group_{ffn_group(i)}/inner_group_{k}/"
            dense = lambda y, p: y @ w[p + "kernel"] + w[p + "bias"]
            heads = lambda y: y.reshape(B, T, N, D).transpose(0, 2, 1, 3)
            q = heads(dense(x, pa + "attention_1/self/query/"))
            kk = heads(dense(x, pa + "attention_1/self/key/"))
            v = heads(dense(x, pa + "attention_1/self/value/"))
            s = q @ kk.transpose(0, 1, 3, 2) / math.sqrt(D) + adder
            s = np.exp(s - s.max(-1, keepdims=True))
            p = s / s.sum(-1, keepdims=True)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
            a = layer_norm(
                x + dense(ctx, pa + "attention_1/output/dense/"),
                w[pa + "LayerNorm/gamma"],
                w[pa + "LayerNorm/beta"],
            )
            h = gelu(dense(a, pf + "ffn_1/intermediate/dense/"))
            x = layer_norm(
                a + dense(h, pf + "ffn_1/intermediate/output/dense/"),
                w[pf + "LayerNorm_1/gamma"],
                w[pf + "LayerNorm_1/beta"],
            )
            outs.append(x)
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return outs, pooled
