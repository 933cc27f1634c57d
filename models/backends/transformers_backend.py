"""Hugging Face transformers backend: safetensors models from a local directory.

It cannot constrain output to a grammar, nor read score distributions: when an
`OutputSpec` with a JSON schema is given, it generates freely and the caller's
parser validates (and, where it can, repairs) the JSON.

torch and transformers are imported only when a backend is created, so importing
this module is cheap and works without them.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.backends.base import (
    BackendOptions,
    Capabilities,
    Generation,
    Message,
    OutputSpec,
    SamplingParams,
    ScoreRequest,
    score_by_generation,
)
from models.foundation.errors import BackendError, BackendUnavailable, ConfigError

if TYPE_CHECKING:
    import torch

INSTALL_HINT = (
    "pip install torch==2.13.0 transformers==5.23.0 safetensors==0.8.0 accelerate==1.15.0"
)
INT8_INSTALL_HINT = "pip install bitsandbytes==0.50.2"
PICKLE_PATTERNS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")
DTYPES = ("float32", "bfloat16", "float16")


def create(model_path: str, options: BackendOptions) -> TransformersBackend:
    """Factory used by the backend registry."""
    return TransformersBackend(model_path, options)


class TransformersBackend:
    """Runs a causal LM with `transformers.generate`, one request at a time.

    Options used: `load_in_8bit`, `n_ctx` (prompt + completion budget),
    `n_threads` (sets torch's global CPU thread count), `n_gpu_layers` (any
    non-zero value puts the whole model on the GPU when CUDA is available), and
    `extra["dtype"]` ("float32", "bfloat16", "float16") / `extra["device"]`.

    INT8 uses bitsandbytes and needs an NVIDIA GPU; it saves memory there. It
    would give no speed gain on CPU anyway, where float32 is the default.
    """

    name = "transformers"

    def __init__(self, model_path: str | Path, options: BackendOptions | None = None) -> None:
        self.options = options or BackendOptions()
        self.model_dir = check_model_dir(Path(model_path))
        torch, transformers = _import_libraries()
        self._torch = torch
        cuda = torch.cuda.is_available()
        if self.options.load_in_8bit:
            check_int8_support(cuda)
        self.capabilities = Capabilities(
            grammar=False, score_distributions=False, gpu_offload=cuda, batching=False
        )
        if self.options.n_threads:
            torch.set_num_threads(self.options.n_threads)
        self.device = self._pick_device(cuda)
        self.tokenizer = self._load_tokenizer(transformers)
        self.model = self._load_model(transformers)
        self._generation_config_class = transformers.GenerationConfig
        self._stopping_list_class = transformers.StoppingCriteriaList
        self._stopping_base_class = transformers.StoppingCriteria

    # -- loading ---------------------------------------------------------------

    def _pick_device(self, cuda: bool) -> str:
        wanted = self.options.extra.get("device")
        if wanted:
            return str(wanted)
        if self.options.load_in_8bit or (cuda and self.options.n_gpu_layers != 0):
            return "cuda"
        return "cpu"

    def _dtype(self) -> torch.dtype:
        name = self.options.extra.get("dtype")
        if name is None:
            if self.device.startswith("cuda"):
                bf16 = self._torch.cuda.is_bf16_supported()
                return self._torch.bfloat16 if bf16 else self._torch.float16
            return self._torch.float32
        if name not in DTYPES:
            raise ConfigError("backend options", "extra.dtype", f"must be one of {DTYPES}")
        return getattr(self._torch, name)

    def _load_tokenizer(self, transformers: Any) -> Any:
        try:
            return transformers.AutoTokenizer.from_pretrained(
                self.model_dir, local_files_only=True, trust_remote_code=False
            )
        except (OSError, ValueError) as exc:
            raise BackendUnavailable(
                f"cannot load the tokenizer of {self.model_dir}: {exc}"
            ) from exc

    def _load_model(self, transformers: Any) -> Any:
        kwargs: dict[str, Any] = {
            "local_files_only": True,
            "trust_remote_code": False,
            "use_safetensors": True,
            "dtype": self._dtype(),
        }
        if self.options.load_in_8bit:
            kwargs["quantization_config"] = transformers.BitsAndBytesConfig(load_in_8bit=True)
            kwargs["device_map"] = {"": 0}
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(self.model_dir, **kwargs)
        except (OSError, ValueError, ImportError) as exc:
            raise BackendUnavailable(f"cannot load {self.model_dir}: {exc}") from exc
        if not self.options.load_in_8bit:
            model = model.to(self.device)
        return model.eval()

    # -- prompts ---------------------------------------------------------------

    def render_prompt(self, messages: Sequence[Message]) -> str:
        """The prompt text the model sees, from the tokenizer's chat template.

        Without a template, a plain "System:/User:/Assistant:" transcript.
        """
        return self._render(messages)[0]

    def _render(self, messages: Sequence[Message]) -> tuple[str, bool]:
        """Prompt text, and whether the tokenizer must add special tokens (BOS)."""
        chat = [{"role": m.role, "content": m.content} for m in messages]
        if not getattr(self.tokenizer, "chat_template", None):
            return plain_transcript(messages), True
        from jinja2 import TemplateError  # a transformers dependency

        try:
            return self._apply_template(chat), False
        except (TemplateError, ValueError) as exc:  # e.g. raise_exception("no system role")
            error = exc
        if chat and chat[0]["role"] == "system":
            with contextlib.suppress(TemplateError, ValueError):
                return self._apply_template(merge_system_into_user(chat)), False
        raise BackendError(f"the chat template failed: {error}") from error

    def _apply_template(self, chat: list[dict[str, str]]) -> str:
        return self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)

    # -- generation ------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        output: OutputSpec | None = None,
    ) -> Generation:
        """Generate one reply. `output` is accepted but cannot constrain decoding here."""
        if self.model is None:
            raise BackendError("the transformers backend is closed")
        start = time.perf_counter()
        text, add_special = self._render(messages)
        inputs = self.tokenizer(text, return_tensors="pt", add_special_tokens=add_special)
        inputs = inputs.to(self.model.device)
        prompt_len = int(inputs["input_ids"].shape[1])
        max_new = self._max_new_tokens(prompt_len, params.max_tokens)
        config = self._generation_config(params, max_new)
        stopping = self._stopping_criteria(params.stop, prompt_len)
        if params.temperature > 0:
            self._torch.manual_seed(params.seed)
        try:
            with self._torch.inference_mode():
                out = self.model.generate(
                    **inputs, generation_config=config, stopping_criteria=stopping
                )
        except RuntimeError as exc:
            raise BackendError(f"generation failed: {exc}") from exc
        new_ids = out[0, prompt_len:].tolist()
        completion = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        completion, finish = self._finish(completion, new_ids, params.stop, max_new)
        return Generation(
            text=completion,
            prompt_tokens=prompt_len,
            completion_tokens=len(new_ids),
            latency_s=time.perf_counter() - start,
            finish_reason=finish,
        )

    def _max_new_tokens(self, prompt_len: int, wanted: int) -> int:
        limit = self.options.n_ctx
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if positions:
            limit = min(limit, int(positions))
        if prompt_len >= limit:
            raise BackendError(
                f"the prompt has {prompt_len} tokens but the context holds {limit}; "
                "shorten the inputs or raise n_ctx"
            )
        return max(1, min(wanted, limit - prompt_len))

    def _eos_ids(self) -> list[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        if eos is None:
            return []
        return [eos] if isinstance(eos, int) else list(eos)

    def _generation_config(self, params: SamplingParams, max_new: int) -> Any:
        eos = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "eos_token_id": eos or None,
            "pad_token_id": pad if pad is not None else (eos[0] if eos else None),
            "do_sample": params.temperature > 0,
        }
        if params.temperature > 0:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        return self._generation_config_class(**kwargs)

    def _stopping_criteria(self, stops: Sequence[str], prompt_len: int) -> Any:
        stops = tuple(s for s in stops if s)
        if not stops:
            return None
        return self._stopping_list_class(
            [_stop_on_strings(self._stopping_base_class, self.tokenizer, stops, prompt_len)]
        )

    def _finish(
        self, text: str, new_ids: list[int], stops: Sequence[str], max_new: int
    ) -> tuple[str, str]:
        cut = cut_at_stop(text, stops)
        if cut is not None:
            return cut, "stop"
        if new_ids and new_ids[-1] in self._eos_ids():
            return text, "stop"
        return text, "length" if len(new_ids) >= max_new else "stop"

    def score(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        """Score mode by plain generation (no token probabilities here)."""
        return score_by_generation(self, requests)

    def count_tokens(self, messages: Sequence[Message]) -> int | None:
        text, special = self._render(messages)
        return len(self.tokenizer(text, add_special_tokens=special)["input_ids"])

    def score_reply_tokens(self, output: OutputSpec) -> int | None:
        return None  # score mode generates here: the caller's estimate applies

    def close(self) -> None:
        """Free the model; the backend cannot generate afterwards."""
        self.model = None
        gc.collect()
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()


# -- helpers (no torch needed) -----------------------------------------------------


def check_model_dir(path: Path) -> Path:
    """A local HF model directory with safetensors weights; pickle weights are refused."""
    if not path.is_dir():
        raise BackendUnavailable(f"model directory not found: {path}")
    if not (path / "config.json").is_file():
        raise BackendUnavailable(f"{path} is not a Hugging Face model directory (no config.json)")
    if any(path.glob("*.safetensors")):
        return path
    pickles = sorted(p.name for pattern in PICKLE_PATTERNS for p in path.glob(pattern))
    if pickles:
        raise BackendUnavailable(
            f"refusing to load pickle weights from {path} ({', '.join(pickles)}): loading "
            "pickle can run arbitrary code. Convert them to safetensors in a trusted "
            "environment (model.save_pretrained(dir, safe_serialization=True))."
        )
    raise BackendUnavailable(f"no *.safetensors weights in {path}")


def check_int8_support(cuda_available: bool) -> None:
    """Raise BackendUnavailable unless bitsandbytes INT8 loading can work here."""
    problems = []
    if not cuda_available:
        problems.append(
            "INT8 (bitsandbytes) needs an NVIDIA GPU with CUDA, and none is available "
            "(it would give no speed gain on CPU anyway): load without load_in_8bit"
        )
    if importlib.util.find_spec("bitsandbytes") is None:
        problems.append(f"bitsandbytes is not installed: {INT8_INSTALL_HINT}")
    if problems:
        raise BackendUnavailable("; ".join(problems))


def plain_transcript(messages: Sequence[Message]) -> str:
    """Fallback prompt for tokenizers without a chat template."""
    labels = {"system": "System", "user": "User", "assistant": "Assistant"}
    turns = [f"{labels[m.role]}: {m.content}" for m in messages]
    return "\n\n".join([*turns, "Assistant:"])


def merge_system_into_user(chat: list[dict[str, str]]) -> list[dict[str, str]]:
    """For templates that reject a system role: prepend it to the first user turn."""
    system, rest = chat[0]["content"], chat[1:]
    if rest and rest[0]["role"] == "user":
        first = {"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}
        return [first, *rest[1:]]
    return [{"role": "user", "content": system}, *rest]


def cut_at_stop(text: str, stops: Sequence[str]) -> str | None:
    """`text` up to the earliest stop string, or None when no stop occurs."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return text[: min(hits)] if hits else None


def _import_libraries() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise BackendUnavailable(
            f"the transformers backend needs torch and transformers ({exc.name} is missing): "
            f"{INSTALL_HINT}"
        ) from exc
    return torch, transformers


def _stop_on_strings(base: type, tokenizer: Any, stops: tuple[str, ...], prompt_len: int) -> Any:
    """A StoppingCriteria that fires once a stop string appears in the completion.

    Only the tail is decoded each step: a stop of n characters spans at most
    4n byte-fallback tokens, so the check stays cheap on long completions.
    """
    import torch

    window = 4 * max(len(s) for s in stops) + 4

    class StopOnStrings(base):  # type: ignore[misc, valid-type]
        def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
            tail = input_ids[0, max(prompt_len, input_ids.shape[1] - window) :]
            text = tokenizer.decode(tail.tolist(), skip_special_tokens=True)
            hit = any(s in text for s in stops)
            return torch.full((input_ids.shape[0],), hit, dtype=torch.bool, device=input_ids.device)

    return StopOnStrings()
