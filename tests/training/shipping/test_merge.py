"""training.shipping.merge on a tiny random Llama and two random LoRA adapters built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from training.shipping.merge import MergeError, main, merge_adapters

pytestmark = pytest.mark.filterwarnings("ignore:The density")  # peft: density 1 prunes nothing

TARGETS = ["q_proj", "v_proj"]


def _build_base(out_dir: Path) -> Path:
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        vocab_size=64,
        max_position_embeddings=64,
    )
    LlamaForCausalLM(config).save_pretrained(out_dir)
    _write_tokenizer(out_dir)
    return out_dir


def _write_tokenizer(out_dir: Path) -> None:
    """A real word-level tokenizer over the 64-token vocabulary (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, **{f"w{i}": i for i in range(1, 64)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>").save_pretrained(out_dir)


def _build_adapter(
    base_dir: Path, out_dir: Path, seed: int, r: int = 4, alpha: int = 8, targets=TARGETS, **kw
) -> Path:
    """A LoRA adapter whose B is random too (peft starts B at zero)."""
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    torch.manual_seed(seed)
    config = LoraConfig(r=r, lora_alpha=alpha, target_modules=targets, lora_dropout=0.0, **kw)
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    model.save_pretrained(out_dir)
    return out_dir


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("merge")
    base = _build_base(root / "base")
    return {
        "root": root,
        "base": base,
        "single": _build_adapter(base, root / "single", seed=1, alpha=8),
        "pairwise": _build_adapter(base, root / "pairwise", seed=2, alpha=4),
    }


def _adapters(setup) -> dict[str, Path]:
    return {"single": setup["single"], "pairwise": setup["pairwise"]}


def _deltas(base_dir: Path, adapter_dir: Path) -> dict[str, torch.Tensor]:
    """Delta weight (B @ A * scaling) of each LoRA module, as peft computes it."""
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model = PeftModel.from_pretrained(base, adapter_dir)
    return {
        name: module.get_delta_weight("default").detach()
        for name, module in model.named_modules()
        if hasattr(module, "get_delta_weight") and "default" in getattr(module, "lora_A", {})
    }


def _factors(adapter_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(adapter_dir / "adapter_model.safetensors")


def _corr(a: torch.Tensor, b: torch.Tensor) -> float:
    return torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1].item()


@pytest.mark.parametrize("method", ["dare_linear", "linear"])
def test_zero_weight_gives_the_first_adapter(setup, tmp_path, method):
    result = merge_adapters(
        setup["base"],
        _adapters(setup),
        tmp_path / "out",
        method=method,
        density=1.0,
        weights={"single": 1.0, "pairwise": 0.0},
        save_full_model=False,
    )
    merged = _deltas(setup["base"], result.adapter_dir)
    single = _deltas(setup["base"], setup["single"])
    assert len(merged) == 4 and merged.keys() == single.keys()  # 2 layers x q, v
    for name in merged:
        assert merged[name].abs().max() > 0
        torch.testing.assert_close(merged[name], single[name], rtol=1e-5, atol=1e-6)
    assert result.model_dir is None and not (tmp_path / "out" / "model").exists()


def test_rslora_adapters_keep_their_scale(setup, tmp_path):
    """peft would give the merged adapter alpha / sqrt(r) = 2, not 1; merge_adapters fixes it."""
    rs = {
        name: _build_adapter(setup["base"], tmp_path / name, seed=s, use_rslora=True)
        for name, s in (("single", 1), ("pairwise", 2))
    }
    result = merge_adapters(
        setup["base"],
        rs,
        tmp_path / "out",
        method="dare_linear",
        density=1.0,
        weights={"single": 1.0, "pairwise": 0.0},
        save_full_model=False,
    )
    merged = _deltas(setup["base"], result.adapter_dir)
    single = _deltas(setup["base"], rs["single"])
    for name in merged:
        torch.testing.assert_close(merged[name], single[name], rtol=1e-5, atol=1e-6)


def test_linear_combines_factors_not_deltas(setup, tmp_path):
    """peft's linear merge sums sqrt(w*s)-scaled A and B separately: (B1'+B2')(A1'+A2')."""
    result = merge_adapters(
        setup["base"], _adapters(setup), tmp_path / "out", method="linear", save_full_model=False
    )
    merged = _deltas(setup["base"], result.adapter_dir)
    d1 = _deltas(setup["base"], setup["single"])
    d2 = _deltas(setup["base"], setup["pairwise"])
    f1, f2 = _factors(setup["single"]), _factors(setup["pairwise"])
    s1, s2 = 8 / 4, 4 / 4  # alpha / r of each adapter
    for name in merged:
        key = name.removeprefix("base_model.model.")
        a1, b1 = (f1[f"base_model.model.{key}.lora_{x}.weight"] for x in "AB")
        a2, b2 = (f2[f"base_model.model.{key}.lora_{x}.weight"] for x in "AB")
        expected = (s1**0.5 * b1 + s2**0.5 * b2) @ (s1**0.5 * a1 + s2**0.5 * a2)
        torch.testing.assert_close(merged[name], expected, rtol=1e-5, atol=1e-5)
        # Both contribute, and the cross terms make it differ from the plain sum of deltas.
        assert not torch.allclose(merged[name], d1[name], atol=1e-3)
        assert not torch.allclose(merged[name], d2[name], atol=1e-3)
        assert not torch.allclose(merged[name], d1[name] + d2[name], atol=1e-3)
        assert _corr(merged[name], d1[name]) > 0.2 and _corr(merged[name], d2[name]) > 0.2


def _zero_share(adapter_dir: Path) -> float:
    tensors = _factors(adapter_dir).values()
    return sum((t == 0).sum().item() for t in tensors) / sum(t.numel() for t in tensors)


def test_dare_drops_entries_reproducibly(setup, tmp_path):
    def run(name: str, seed: int, method: str = "dare_linear", weights=None) -> Path:
        weights = {"single": 1.0, "pairwise": 0.0} if weights is None else weights
        return merge_adapters(
            setup["base"],
            _adapters(setup),
            tmp_path / name,
            method=method,
            density=0.5,
            weights=weights,
            seed=seed,
            save_full_model=False,
        ).adapter_dir

    first, again, other = run("a", seed=0), run("b", seed=0), run("c", seed=1)
    assert _zero_share(setup["single"]) == 0
    # One adapter weighted: half of its entries dropped, the rest rescaled by 1/density.
    assert 0.4 < _zero_share(first) < 0.6
    merged, single = _factors(first), _factors(setup["single"])
    for key, tensor in merged.items():
        kept = tensor != 0
        # A and B are each scaled by sqrt(weight * alpha / r) = sqrt(8 / 4).
        torch.testing.assert_close(tensor[kept], single[key][kept] * 2**0.5 / 0.5)
    # Same seed, same merge; another seed, other entries dropped.
    for key, tensor in _factors(again).items():
        assert torch.equal(tensor, merged[key])
    assert any(not torch.equal(t, merged[k]) for k, t in _factors(other).items())
    # DARE-TIES, both adapters weighted: an entry is zero when both drop it, (1-0.5)^2.
    both = run("d", seed=0, method="dare_ties", weights={"single": 1.0, "pairwise": 1.0})
    assert 0.15 < _zero_share(both) < 0.35


def test_full_model_matches_base_plus_adapter(setup, tmp_path):
    result = merge_adapters(setup["base"], _adapters(setup), tmp_path / "out", density=0.7)
    assert (result.adapter_dir / "adapter_config.json").is_file()
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    assert not (result.adapter_dir / "merged").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "adapter",
        "merge.json",
        "model",
    ]
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(setup["base"], dtype=torch.float32).eval()
        base_logits = base(ids).logits
        peft_model = PeftModel.from_pretrained(base, result.adapter_dir).eval()
        adapter_logits = peft_model(ids).logits
        full = AutoModelForCausalLM.from_pretrained(result.model_dir, dtype=torch.float32).eval()
        full_logits = full(ids).logits
    torch.testing.assert_close(full_logits, adapter_logits, rtol=1e-4, atol=1e-4)
    assert not torch.allclose(full_logits, base_logits, atol=1e-3)
    assert list(result.model_dir.glob("*.safetensors"))

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(result.model_dir)
    assert tokenizer("w3 w5")["input_ids"] == [3, 5]

    record = json.loads(result.record.read_text())
    assert record["method"] == "dare_ties" and record["density"] == 0.7
    assert record["weights"] == {"single": 1.0, "pairwise": 1.0} and record["seed"] == 0
    assert record["adapters"] == {k: str(v) for k, v in _adapters(setup).items()}
    assert record["r"] == 4 and record["target_modules"] == TARGETS


def test_base_without_tokenizer(setup, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(setup["base"] / name, bare / name)
    result = merge_adapters(bare, _adapters(setup), tmp_path / "out", method="linear")
    assert (result.model_dir / "config.json").is_file()
    assert not list(result.model_dir.glob("tokenizer*"))
    assert json.loads(result.record.read_text())["density"] is None


def test_cli(setup, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--base", str(setup["base"]), "--out", str(out), "--no-full-model"]
    argv += ["--adapter", f"single={setup['single']}", "--adapter", f"pairwise={setup['pairwise']}"]
    assert main([*argv, "--method", "dare_linear", "--weight", "pairwise=0.5"]) == 0
    assert "merged adapter" in capsys.readouterr().out
    record = json.loads((out / "merge.json").read_text())
    assert record["weights"] == {"single": 1.0, "pairwise": 0.5}
    assert record["method"] == "dare_linear" and not (out / "model").exists()

    assert main([*argv, "--method", "svd"]) == 2
    assert "dare_ties" in capsys.readouterr().err
    assert main([*argv, "--weight", "pairwise"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_unknown_method(setup, tmp_path):
    with pytest.raises(ValueError, match=r"'cat'.*linear, ties, dare_linear, dare_ties"):
        merge_adapters(setup["base"], _adapters(setup), tmp_path, method="cat")


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"r": 2}, r"differ in rank \(single: 4, pairwise: 2\)"),
        ({"targets": ["q_proj"]}, r"differ in target modules"),
    ],
)
def test_incompatible_adapters(setup, tmp_path, kw, message):
    other = _build_adapter(setup["base"], tmp_path / "other", seed=3, **kw)
    adapters = {"single": setup["single"], "pairwise": other}
    with pytest.raises(MergeError, match=message):
        merge_adapters(setup["base"], adapters, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"density": 0.0}, r"density must be in \(0, 1\]"),
        ({"weights": {"single": 1.0, "judge": 1.0}}, r"\['judge'\], which are not adapters"),
    ],
)
def test_bad_arguments(setup, tmp_path, kw, message):
    with pytest.raises(MergeError, match=message):
        merge_adapters(setup["base"], _adapters(setup), tmp_path / "out", **kw)


def test_adapter_folder_must_hold_an_adapter(setup, tmp_path):
    adapters = {"single": setup["single"], "pairwise": tmp_path}
    with pytest.raises(MergeError, match=r"no adapter_config\.json"):
        merge_adapters(setup["base"], adapters, tmp_path / "out")


@pytest.mark.parametrize("method", ["ties", "dare_ties", "magnitude_prune"])  # others above
def test_every_method_gives_a_loadable_adapter(setup, tmp_path, method):
    result = merge_adapters(
        setup["base"], _adapters(setup), tmp_path / "out", method=method, save_full_model=False
    )
    config = json.loads((result.adapter_dir / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["lora_alpha"] == 4
    deltas = _deltas(setup["base"], result.adapter_dir)
    assert len(deltas) == 4 and all(d.abs().max() > 0 for d in deltas.values())
