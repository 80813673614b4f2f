"""CTranslate2 Whisper directory -> transformers checkpoint (safetensors + processor files).

CTranslate2's ``model.bin`` (binary version >= 4, as written by
``ctranslate2.specs.ModelSpec._serialize``) is: uint32 version, string spec name, uint32 spec
revision, uint32 variable count, then per variable: string name, uint8 rank, uint32 dims[rank],
uint8 dtype id (float32, int8, int16, int32, float16, bfloat16), uint32 byte count, raw bytes;
then uint32 alias count and (alias, target) string pairs. A string is a uint16 length that
counts a trailing NUL, then the bytes. The transformers converter in
``ctranslate2/converters/transformers.py`` (WhisperLoader/BartLoader) fuses q/k/v of
self-attention into ``linear_0`` and k/v of cross-attention into ``linear_1``; k has no bias in
Whisper, so its share of the fused bias is zero. Here the mapping runs backwards.
"""

from __future__ import annotations

import json
import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
_REQUIRED = ("model.bin", "config.json")
_LANG_RE = re.compile(r"^<\|([a-z]{2,3}|haw|yue)\|>$")


class ConversionError(ValueError):
    """The source is not a CTranslate2 Whisper model this converter can read."""


@dataclass(frozen=True)
class Ct2Model:
    spec: str
    revision: int
    variables: dict[str, np.ndarray]
    aliases: dict[str, str]

    def get(self, name: str) -> np.ndarray:
        name = self.aliases.get(name, name)
        try:
            return self.variables[name]
        except KeyError:
            raise ConversionError(f"model.bin has no variable {name!r}") from None


class _Reader:
    def __init__(self, data: bytes | mmap.mmap, path: Path) -> None:
        self.data, self.off, self.path = data, 0, path

    def take(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        if self.off + size > len(self.data):
            raise ConversionError(f"{self.path}: truncated at byte {self.off}")
        (value,) = struct.unpack_from("<" + fmt, self.data, self.off)
        self.off += size
        return value

    def string(self) -> str:
        n = self.take("H")
        text = self.data[self.off : self.off + n - 1].decode("utf-8")
        self.off += n
        return text

    def raw(self, n: int) -> memoryview:
        """The next ``n`` bytes, not copied (a view of the mapped file)."""
        if self.off + n > len(self.data):
            raise ConversionError(f"{self.path}: truncated at byte {self.off}")
        chunk = memoryview(self.data)[self.off : self.off + n]
        self.off += n
        return chunk


def read_ct2_model(path: str | Path) -> Ct2Model:
    """Parse a CTranslate2 ``model.bin`` into numpy arrays (bfloat16 comes back as float32):
    views of the file mapped read-only, so only the variables used are read into memory."""
    path = Path(path)
    with path.open("rb") as file:
        if not file.seek(0, 2):
            raise ConversionError(f"{path}: truncated at byte 0")
        r = _Reader(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ), path)
    version = r.take("I")
    if version < 4 or version > 6:
        raise ConversionError(
            f"{path}: CTranslate2 binary version {version} is not supported (4..6 are); "
            "re-convert the model with a recent ctranslate2"
        )
    spec = r.string()
    revision = r.take("I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(r.take("I")):
        name = r.string()
        shape = tuple(r.take("I") for _ in range(r.take("B")))
        type_id = r.take("B")
        nbytes = r.take("I")
        if type_id >= len(_DTYPES):
            raise ConversionError(f"{path}: variable {name} has unknown dtype id {type_id}")
        raw = r.raw(nbytes)
        dtype = _DTYPES[type_id]
        if dtype == "bfloat16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
        variables[name] = array.reshape(shape) if shape else array.reshape(())
    aliases = {}
    for _ in range(r.take("I")):
        alias = r.string()
        aliases[alias] = r.string()
    return Ct2Model(spec, revision, variables, aliases)


def _check_source(src: Path) -> None:
    if not src.is_dir():
        raise ConversionError(f"{src}: not a directory (expected a CTranslate2 Whisper model dir)")
    missing = [f for f in _REQUIRED if not (src / f).is_file()]
    if missing:
        raise ConversionError(
            f"{src}: not a CTranslate2 model directory (missing {', '.join(missing)}); "
            "expected model.bin, config.json and tokenizer.json as written by "
            "ct2-transformers-converter or shipped by faster-whisper models"
        )
    if not (src / "tokenizer.json").is_file():
        raise ConversionError(
            f"{src}: tokenizer.json is missing; copy it from the original Whisper model"
        )


def _float(model: Ct2Model, name: str) -> np.ndarray:
    array = model.get(name)
    if array.dtype not in (np.float16, np.float32):
        raise ConversionError(
            f"variable {name} is {array.dtype}: only float16/float32/bfloat16 models can be "
            "converted; quantized (int8) models lose their original weights - convert the "
            "original checkpoint with --quantization float16 instead"
        )
    return array


def _scalar(model: Ct2Model, name: str, default: int) -> int:
    value = model.variables.get(name)
    return int(value) if value is not None else default


def _split(array: np.ndarray, parts: int) -> list[np.ndarray]:
    if array.shape[0] % parts:
        raise ConversionError(f"cannot split a fused projection of {array.shape[0]} rows")
    return list(np.split(array, parts, axis=0))


def _attention(model: Ct2Model, src: str, dst: str, fused: str) -> dict[str, np.ndarray]:
    """Map one CT2 attention block; ``fused`` is "qkv" (self) or "kv" (cross)."""
    out: dict[str, np.ndarray] = {}
    if fused == "qkv":
        w = _split(_float(model, f"{src}/linear_0/weight"), 3)
        b = _split(_float(model, f"{src}/linear_0/bias"), 3)
        out_name = f"{src}/linear_1"
    else:
        w = [
            _float(model, f"{src}/linear_0/weight"),
            *_split(_float(model, f"{src}/linear_1/weight"), 2),
        ]
        b = [
            _float(model, f"{src}/linear_0/bias"),
            *_split(_float(model, f"{src}/linear_1/bias"), 2),
        ]
        out_name = f"{src}/linear_2"
    if np.any(b[1] != 0):
        raise ConversionError(f"{src}: key bias is not zero; this is not a Whisper model")
    for proj, weight, bias in zip(("q", "k", "v"), w, b, strict=True):
        out[f"{dst}.{proj}_proj.weight"] = weight
        if proj != "k":
            out[f"{dst}.{proj}_proj.bias"] = bias
    out[f"{dst}.out_proj.weight"] = _float(model, f"{out_name}/weight")
    out[f"{dst}.out_proj.bias"] = _float(model, f"{out_name}/bias")
    return out


def _norm(model: Ct2Model, src: str, dst: str) -> dict[str, np.ndarray]:
    return {
        f"{dst}.weight": _float(model, f"{src}/gamma"),
        f"{dst}.bias": _float(model, f"{src}/beta"),
    }


def _linear(model: Ct2Model, src: str, dst: str) -> dict[str, np.ndarray]:
    return {
        f"{dst}.weight": _float(model, f"{src}/weight"),
        f"{dst}.bias": _float(model, f"{src}/bias"),
    }


def _count_layers(model: Ct2Model, prefix: str) -> int:
    pattern = re.compile(rf"^{prefix}/layer_(\d+)/")
    found = {int(m.group(1)) for n in model.variables if (m := pattern.match(n))}
    if not found or found != set(range(len(found))):
        raise ConversionError(f"model.bin has no contiguous {prefix} layers")
    return len(found)


def ct2_to_state_dict(model: Ct2Model) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Rename CT2 variables to transformers' WhisperForConditionalGeneration; return dims too."""
    if model.spec != "WhisperSpec":
        raise ConversionError(f"model.bin holds a {model.spec}, not a WhisperSpec")
    n_enc, n_dec = _count_layers(model, "encoder"), _count_layers(model, "decoder")
    sd: dict[str, np.ndarray] = {}
    for conv in ("conv1", "conv2"):
        sd |= _linear(model, f"encoder/{conv}", f"model.encoder.{conv}")
    sd["model.encoder.embed_positions.weight"] = _float(
        model, "encoder/position_encodings/encodings"
    )
    for i in range(n_enc):
        s, d = f"encoder/layer_{i}", f"model.encoder.layers.{i}"
        sd |= _attention(model, f"{s}/self_attention", f"{d}.self_attn", "qkv")
        sd |= _norm(model, f"{s}/self_attention/layer_norm", f"{d}.self_attn_layer_norm")
        sd |= _linear(model, f"{s}/ffn/linear_0", f"{d}.fc1")
        sd |= _linear(model, f"{s}/ffn/linear_1", f"{d}.fc2")
        sd |= _norm(model, f"{s}/ffn/layer_norm", f"{d}.final_layer_norm")
    sd |= _norm(model, "encoder/layer_norm", "model.encoder.layer_norm")
    sd["model.decoder.embed_tokens.weight"] = _float(model, "decoder/embeddings/weight")
    sd["model.decoder.embed_positions.weight"] = _float(
        model, "decoder/position_encodings/encodings"
    )
    for i in range(n_dec):
        s, d = f"decoder/layer_{i}", f"model.decoder.layers.{i}"
        sd |= _attention(model, f"{s}/self_attention", f"{d}.self_attn", "qkv")
        sd |= _norm(model, f"{s}/self_attention/layer_norm", f"{d}.self_attn_layer_norm")
        sd |= _attention(model, f"{s}/attention", f"{d}.encoder_attn", "kv")
        sd |= _norm(model, f"{s}/attention/layer_norm", f"{d}.encoder_attn_layer_norm")
        sd |= _linear(model, f"{s}/ffn/linear_0", f"{d}.fc1")
        sd |= _linear(model, f"{s}/ffn/linear_1", f"{d}.fc2")
        sd |= _norm(model, f"{s}/ffn/layer_norm", f"{d}.final_layer_norm")
    sd |= _norm(model, "decoder/layer_norm", "model.decoder.layer_norm")
    # The output projection is usually an alias of the embeddings (tied); keep it if not.
    if "decoder/projection/weight" in model.variables:
        sd["proj_out.weight"] = _float(model, "decoder/projection/weight")

    d_model = sd["model.encoder.conv1.weight"].shape[0]
    dims = {
        "d_model": d_model,
        "num_mel_bins": sd["model.encoder.conv1.weight"].shape[1],
        "vocab_size": sd["model.decoder.embed_tokens.weight"].shape[0],
        "encoder_layers": n_enc,
        "decoder_layers": n_dec,
        "encoder_attention_heads": _scalar(model, "encoder/num_heads", d_model // 64),
        "decoder_attention_heads": _scalar(model, "decoder/num_heads", d_model // 64),
        "encoder_ffn_dim": sd["model.encoder.layers.0.fc1.weight"].shape[0],
        "decoder_ffn_dim": sd["model.decoder.layers.0.fc1.weight"].shape[0],
        "max_source_positions": sd["model.encoder.embed_positions.weight"].shape[0],
        "max_target_positions": sd["model.decoder.embed_positions.weight"].shape[0],
    }
    return sd, dims


def _special_ids(tokenizer_json: dict[str, Any]) -> dict[str, int]:
    return {t["content"]: int(t["id"]) for t in tokenizer_json.get("added_tokens", [])}


def convert_ct2_to_transformers(src: str | Path, dst: str | Path) -> Path:
    """Write a transformers Whisper checkpoint for the CTranslate2 model in ``src`` to ``dst``.

    The result loads offline with ``WhisperForConditionalGeneration.from_pretrained(dst)`` and
    ``WhisperProcessor.from_pretrained(dst)``. Weights keep their stored precision.
    """
    src, dst = Path(src), Path(dst)
    _check_source(src)
    try:
        import torch
        from safetensors.torch import save_file
        from transformers import (
            AddedToken,
            GenerationConfig,
            WhisperConfig,
            WhisperFeatureExtractor,
            WhisperProcessor,
            WhisperTokenizerFast,  # transformers 4.x: the slow class wants vocab.json
        )
    except ImportError as exc:
        raise ConversionError(
            f"converting needs torch, transformers and safetensors ({exc}); "
            "install them with: pip install 'voiced[gpu]'"
        ) from exc

    ct2 = read_ct2_model(src / "model.bin")
    state, dims = ct2_to_state_dict(ct2)
    ct2_config = json.loads((src / "config.json").read_text())
    tokenizer_json = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    special = _special_ids(tokenizer_json)
    needed = (
        "<|endoftext|>",
        "<|startoftranscript|>",
        "<|notimestamps|>",
        "<|startofprev|>",
        "<|transcribe|>",
        "<|translate|>",
    )
    missing = [t for t in needed if t not in special]
    if missing:
        raise ConversionError(f"{src}/tokenizer.json lacks Whisper tokens: {', '.join(missing)}")
    eot, sot = special["<|endoftext|>"], special["<|startoftranscript|>"]
    multilingual = dims["vocab_size"] >= 51865
    langs = {
        t: i for t, i in special.items() if _LANG_RE.match(t) and sot < i < special["<|translate|>"]
    }

    dst.mkdir(parents=True, exist_ok=True)
    config = WhisperConfig(
        **dims,
        pad_token_id=eot,
        bos_token_id=eot,
        eos_token_id=eot,
        decoder_start_token_id=sot,
        suppress_tokens=list(ct2_config.get("suppress_ids", [])),
        begin_suppress_tokens=list(ct2_config.get("suppress_ids_begin", [220, eot])),
        tie_word_embeddings="proj_out.weight" not in state,
        architectures=["WhisperForConditionalGeneration"],
    )
    dtype = state["model.encoder.conv1.weight"].dtype
    config.dtype = "float16" if dtype == np.float16 else "float32"
    config.save_pretrained(dst)

    tensors = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in state.items()}
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})

    generation = GenerationConfig(
        decoder_start_token_id=sot,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        max_length=dims["max_target_positions"],
        no_timestamps_token_id=special["<|notimestamps|>"],
        prev_sot_token_id=special["<|startofprev|>"],
        suppress_tokens=config.suppress_tokens,
        begin_suppress_tokens=config.begin_suppress_tokens,
        is_multilingual=multilingual,
        alignment_heads=[list(h) for h in ct2_config.get("alignment_heads", [])],
        max_initial_timestamp_index=50,
        return_timestamps=False,
    )
    if multilingual:
        generation.lang_to_id = langs
        generation.task_to_id = {
            "transcribe": special["<|transcribe|>"],
            "translate": special["<|translate|>"],
        }
    generation.save_pretrained(dst)

    tokenizer = WhisperTokenizerFast(
        tokenizer_file=str(src / "tokenizer.json"),
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        predict_timestamps=False,
    )
    # Timestamp tokens fill the vocabulary after the last special token, as in OpenAI's.
    extra = dims["vocab_size"] - len(tokenizer)
    if extra > 0:
        tokenizer.add_tokens(
            [
                AddedToken(f"<|{i * 0.02:.2f}|>", lstrip=False, rstrip=False, normalized=False)
                for i in range(extra)
            ]
        )
    feature_extractor = WhisperFeatureExtractor(feature_size=dims["num_mel_bins"])
    WhisperProcessor(feature_extractor=feature_extractor, tokenizer=tokenizer).save_pretrained(dst)
    return dst
