"""A base's SentencePiece tokenizer, rebuilt from its GGUF, for llama.cpp's converter.

transformers loads a GGUF's tokenizer into a `tokenizer.json` only: no
`tokenizer.model`. For a SentencePiece model (Gemma 3) llama.cpp's
`convert_hf_to_gguf.py` then falls back to its BPE path, which guesses the
pre-tokenizer from a hash of sample tokens and writes a `gpt2` tokenizer: not
the `llama` (SentencePiece) tokenizer of the original GGUF. So we rebuild the
`tokenizer.model` the GGUF was made from (pieces, scores and token types are
all in its metadata), and tell the converter which pieces are added tokens,
as transformers 4 did in `tokenizer_config.json` (`added_tokens_decoder`).
With both, the re-exported GGUF has the original's vocabulary, types, scores
and special ids, token for token.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

# gguf TokenType and sentencepiece ModelProto.SentencePiece.Type share numbers.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


@dataclass(frozen=True)
class GgufVocab:
    model: str  # tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (byte-level BPE), ...
    tokens: list[str]
    scores: list[float]
    types: list[int]
    special_ids: dict[str, int]  # bos, eos, unk, pad -> id
    add_special: dict[str, bool]  # add_bos_token, add_eos_token -> flag
    add_space_prefix: bool


def read_gguf_vocab(gguf_path: Path) -> GgufVocab:
    """The tokenizer metadata of a GGUF file (gguf's reader: ~15 s for 262k tokens)."""
    import numpy as np
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf_path)).fields

    def scalar(key: str) -> Any:
        field = fields.get(key)
        return field.contents() if field is not None else None

    def array(key: str) -> list:
        field = fields.get(key)
        if field is None:
            return []
        return np.concatenate([field.parts[i] for i in field.data]).tolist()

    tokens_field = fields["tokenizer.ggml.tokens"]
    tokens = [bytes(tokens_field.parts[i]).decode("utf-8") for i in tokens_field.data]
    special_ids = {
        name: value
        for name, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding"))
        if (value := scalar(f"tokenizer.ggml.{key}_token_id")) is not None
    }
    add_special = {
        f"add_{name}_token": bool(value)
        for name in ("bos", "eos")
        if (value := scalar(f"tokenizer.ggml.add_{name}_token")) is not None
    }
    return GgufVocab(
        model=str(scalar("tokenizer.ggml.model")),
        tokens=tokens,
        scores=array("tokenizer.ggml.scores") or [0.0] * len(tokens),
        types=array("tokenizer.ggml.token_type") or [NORMAL] * len(tokens),
        special_ids=special_ids,
        add_special=add_special,
        add_space_prefix=bool(scalar("tokenizer.ggml.add_space_prefix")),
    )


def write_sentencepiece_model(vocab: GgufVocab, out_file: Path) -> Path:
    """Write the SentencePiece `tokenizer.model` equivalent to a `llama` GGUF vocabulary.

    SentencePiece needs exactly one UNKNOWN piece: the GGUF's unknown token gets
    that type (llama.cpp's own GGUFs often mark it CONTROL; the converter makes
    it CONTROL again from `added_tokens_decoder`, see `added_tokens_decoder`).
    """
    from sentencepiece import sentencepiece_model_pb2 as sp_pb2

    if vocab.model != "llama":
        raise ValueError(f"not a SentencePiece vocabulary (tokenizer model {vocab.model!r})")
    proto = sp_pb2.ModelProto()
    trainer = proto.trainer_spec
    trainer.model_type = sp_pb2.TrainerSpec.BPE  # llama.cpp merges by piece score either way
    trainer.vocab_size = len(vocab.tokens)
    trainer.byte_fallback = BYTE in vocab.types
    unk = vocab.special_ids.get("unk", 0)
    trainer.unk_id = unk
    trainer.bos_id = vocab.special_ids.get("bos", -1)
    trainer.eos_id = vocab.special_ids.get("eos", -1)
    trainer.pad_id = vocab.special_ids.get("pad", -1)
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = vocab.add_space_prefix
    proto.normalizer_spec.remove_extra_whitespaces = False
    for token_id, (token, score, kind) in enumerate(zip(vocab.tokens, vocab.scores, vocab.types)):
        piece = proto.pieces.add()
        piece.piece = token
        piece.score = score
        piece.type = UNKNOWN if token_id == unk else kind
    out_file.write_bytes(proto.SerializeToString())
    return out_file


def added_tokens_decoder(sp_model_file: Path) -> dict[str, dict[str, Any]]:
    """`tokenizer_config.json`'s `added_tokens_decoder` for the special pieces of a model.

    Control and unknown pieces are special; user-defined pieces are not (the
    converter then types them CONTROL and USER_DEFINED, as in the original GGUF).
    """
    from sentencepiece import sentencepiece_model_pb2 as sp_pb2

    proto = sp_pb2.ModelProto()
    proto.ParseFromString(sp_model_file.read_bytes())
    wanted = {CONTROL: True, UNKNOWN: True, USER_DEFINED: False}
    return {
        str(token_id): {
            "content": piece.piece,
            "special": wanted[piece.type],
            "normalized": False,
            "lstrip": False,
            "rstrip": False,
            "single_word": False,
        }
        for token_id, piece in enumerate(proto.pieces)
        if piece.type in wanted
    }
