"""SentencePiece encoding as Google's encode_pieces/encode_ids, digit+"," fix-up included, with
cached per-model tables so the common case stays a single C++ call."""

from __future__ import annotations

import operator

from albert_tf.text.normalization import convert_to_unicode

SPIECE_UNDERLINE = "\u2581"
SAMPLE_NBEST_SIZE = 64
SAMPLE_ALPHA = 0.1


def _needs_comma_fix(piece: str) -> bool:
    """Google's test: a piece longer than one character ending in a digit then ","."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _reencode(sp, piece: str) -> list:
    """Google's effective fix-up of one piece: re-encode it without ',' and '▁', keep the
    '▁' the re-encoding adds (Google's branch to drop it never runs), then ','."""
    return list(sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)) + [piece[-1]]


class SentencePieceTables:
    """Per-model caches: id→piece list, piece→id dict, and the comma fix-up tables."""

    def __init__(self, sp):
        self.sp = sp
        n = sp.get_piece_size()
        self.pieces = [sp.id_to_piece(i) for i in range(n)]
        self.vocab = {p: i for i, p in enumerate(self.pieces)}
        self.unk_id = sp.unk_id()
        self.fix_pieces = {p: _reencode(sp, p) for p in self.pieces if _needs_comma_fix(p)}
        self.fix_ids = {
            self.vocab[p]: [self.vocab.get(q, self.unk_id) for q in rep]
            for p, rep in self.fix_pieces.items()
        }
        # With "," a known piece no unknown piece (a run of unknown characters) can end in
        # ",", so only vocabulary pieces can need the fix-up; otherwise check every piece.
        self.generic = "," not in self.vocab
        self._getter = operator.itemgetter

    def ids_to_pieces(self, ids) -> list:
        """Pieces of known ids through the cached table."""
        if len(ids) == 1:
            return [self.pieces[ids[0]]]
        return list(self._getter(*ids)(self.pieces)) if ids else []


_SP_INFOS: dict = {}


def model_tables(sp) -> SentencePieceTables:
    """The cached SentencePieceTables of a SentencePieceProcessor (built once per processor)."""
    entry = _SP_INFOS.get(id(sp))
    if entry is None or entry.sp is not sp:
        entry = _SP_INFOS[id(sp)] = SentencePieceTables(sp)
    return entry


def fix_comma_pieces(info: SentencePieceTables, pieces: list) -> list:
    """Applies the comma fix-up to a piece list, only where a piece needs it."""
    if info.generic:
        if not any(_needs_comma_fix(p) for p in pieces):
            return pieces
        out = []
        for p in pieces:
            if _needs_comma_fix(p):
                out.extend(info.fix_pieces.get(p) or _reencode(info.sp, p))
            else:
                out.append(p)
        return out
    return _expand(pieces, info.fix_pieces)


def fix_comma_ids(info: SentencePieceTables, ids: list) -> list:
    """The comma fix-up on ids of known pieces (caller ensures no unknown pieces)."""
    return _expand(ids, info.fix_ids)


def _expand(items: list, table: dict) -> list:
    """Each item replaced by its table entry (a list) where it has one; the input itself when
    no item has one."""
    if not table or table.keys().isdisjoint(items):
        return items
    out = []
    for item in items:
        rep = table.get(item)
        if rep is None:
            out.append(item)
        else:
            out.extend(rep)
    return out


def _raw_pieces(sp, text: str, sample: bool) -> list:
    """SentencePiece's pieces (surface text for unknown pieces), optionally sampled."""
    if sample:
        return sp.encode(
            text,
            out_type=str,
            enable_sampling=True,
            nbest_size=SAMPLE_NBEST_SIZE,
            alpha=SAMPLE_ALPHA,
        )
    return sp.encode(text, out_type=str)


def encode_pieces(sp_model, text, return_unicode=True, sample=False) -> list:
    """Google's encode_pieces: SentencePiece pieces plus its digit+',' fix-up (▁ kept).

    `return_unicode` is accepted for API compatibility; pieces are always str.
    """
    del return_unicode
    text = convert_to_unicode(text)
    info = model_tables(sp_model)
    if not sample and not info.generic:
        ids = sp_model.encode(text)
        if info.unk_id not in ids:
            return fix_comma_pieces(info, info.ids_to_pieces(ids))
    return fix_comma_pieces(info, _raw_pieces(sp_model, text, sample))


def encode_ids(sp_model, text, sample=False) -> list:
    """Google's encode_ids: PieceToId over encode_pieces (unknown pieces → unk id)."""
    text = convert_to_unicode(text)
    info = model_tables(sp_model)
    if not sample and not info.generic:
        ids = sp_model.encode(text)
        if info.unk_id not in ids:
            return fix_comma_ids(info, ids)
    vocab, unk = info.vocab, info.unk_id
    return [vocab.get(p, unk) for p in encode_pieces(sp_model, text, sample=sample)]
