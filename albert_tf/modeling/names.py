"""Google's variable names for every albert_tf layer: the canonical names of the project.

Google's TF1 checkpoints name each weight (`bert/encoder/transformer/group_0/...`); every format
(TF1, keras-hub, Hugging Face) maps from these names, so the map lives with the layers.
"""


def _dense(prefix, layer):
    return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix, layer):
    return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def encoder_variable_map(albert) -> dict:
    """Google name → variable for an AlbertModel (embeddings, shared transformer, pooler)."""
    emb = albert.embedding
    names = {
        "bert/embeddings/word_embeddings": emb.word_embeddings.embeddings,
        "bert/embeddings/token_type_embeddings": emb.token_type_embeddings,
        "bert/embeddings/position_embeddings": emb.position_embeddings,
        **_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm),
        **_dense("bert/pooler/dense", albert.pooler.dense),
    }
    if emb.projection is not None:
        names.update(_dense("bert/encoder/embedding_hidden_mapping_in", emb.projection))
    root = "bert/encoder/transformer"
    for (group, inner), att in albert.encoder.sublayers["attention"].items():
        p = f"{root}/group_{group}/inner_group_{inner}"
        names.update(_dense(f"{p}/attention_1/self/query", att.query))
        names.update(_dense(f"{p}/attention_1/self/key", att.key))
        names.update(_dense(f"{p}/attention_1/self/value", att.value))
        names.update(_dense(f"{p}/attention_1/output/dense", att.output_dense))
        names.update(_layer_norm(f"{p}/LayerNorm", att.layer_norm))
    for (group, inner), ffn in albert.encoder.sublayers["ffn"].items():
        p = f"{root}/group_{group}/inner_group_{inner}"
        names.update(_dense(f"{p}/ffn_1/intermediate/dense", ffn.intermediate))
        names.update(_dense(f"{p}/ffn_1/intermediate/output/dense", ffn.output_dense))
        names.update(_layer_norm(f"{p}/LayerNorm_1", ffn.layer_norm))
    return names


def mlm_head_variable_map(head) -> dict:
    """Google name → variable for a MaskedLMHead (`cls/predictions/...`)."""
    return {
        **_dense("cls/predictions/transform/dense", head.transform),
        **_layer_norm("cls/predictions/transform/LayerNorm", head.layer_norm),
        "cls/predictions/output_bias": head.output_bias,
    }


def pooled_head_variable_map(head, prefix: str) -> dict:
    """A PooledClassifierHead under `prefix` (e.g. "cls/seq_relationship", or "" for root)."""
    p = f"{prefix}/" if prefix else ""
    return {f"{p}output_weights": head.output_weights, f"{p}output_bias": head.output_bias}


def _is_encoder(obj) -> bool:
    """An AlbertModel, recognised by its parts (this module sits below the models)."""
    return all(hasattr(obj, part) for part in ("embedding", "encoder", "pooler"))


def original_variable_map(model) -> dict:
    """Google name → Keras variable for any albert_tf model.

    An AlbertModel maps its own variables; a task model exposes its encoder as `.albert` and its
    head variables through `original_head_variables()`.
    """
    if _is_encoder(model):
        return encoder_variable_map(model)
    albert = getattr(model, "albert", None)
    if not _is_encoder(albert):
        raise TypeError(
            f"{type(model).__name__} is not an albert_tf model (no AlbertModel at .albert)"
        )
    names = encoder_variable_map(albert)
    heads = getattr(model, "original_head_variables", None)
    if heads is not None:
        names.update(heads())
    return names
