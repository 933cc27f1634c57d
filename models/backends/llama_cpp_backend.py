"""GGUF models through llama-cpp-python, with grammar and score distributions.

Decoding runs token by token over llama.cpp's low-level API instead of
`create_completion`, for two reasons:

- At each JSON position that carries a `ValueRule`, we read the logits of that
  step (only the last row: `logits_all=True` would cost seconds and gigabytes
  with a 262k vocabulary) and turn them into a probability per candidate value.
  That gives every judgment an expected score and a confidence.
- The same rules restrict what may be written there, so a verdict can only be
  one that agrees with the scores already written.

The JSON schema becomes a llama.cpp grammar, so the output always parses.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from app.foundation.errors import BackendError, BackendUnavailable
from models import model_file
from models.backends.base import (
    BackendOptions,
    Capabilities,
    Generation,
    Message,
    OutputSpec,
    SamplingParams,
    ScoreRequest,
    ValueDistribution,
    ValueRule,
    ValueRules,
)
from models.backends.grammar_gate import GrammarGate, choose_token
from models.backends.json_skeleton import JsonSkeleton
from models.backends.json_tracker import JsonTracker
from models.backends.likelihood_reader import Continuation, LikelihoodReader
from models.backends.likelihood_reader import Reading as ReplyReading
from models.backends.reply_criteria import continuation
from models.backends.reply_walker import ReplyWalker, ReplyWalkError, reply_token_bound
from models.backends.sequence_runner import SequenceRunner, prefix_groups, shared_length
from models.backends.state_reader import StateReader, load_lora, set_lora
from models.backends.value_constraints import TokenTable, entropy_of
from models.backends.value_reader import Feed, Reading, candidate_probs, pick_value
from models.readings import SYSTEM_PROMPT, AnswerReading, ReplyCriteria, pooled

REPEAT_WINDOW = 64
ZWJ = "\u200d"  # zero-width joiner: keeps text readable, breaks a control-token spelling
LOOP_TOKENS = 6


@dataclass
class _RuleState:
    """Per-generation state of the value rules."""

    rules: ValueRules | None
    rng: np.random.Generator
    params: SamplingParams
    chosen: dict[Any, str] = field(default_factory=dict)
    distributions: list[ValueDistribution] = field(default_factory=list)


def create(model_path: str, options: BackendOptions) -> LlamaCppBackend:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BackendUnavailable(
            "the llama-cpp backend needs llama-cpp-python: run `make setup` "
            "(or `pip install llama-cpp-python==0.3.36`)"
        ) from exc
    return LlamaCppBackend(model_path, options)


# llama-cpp-python's schema converter lets raw control characters (newlines
# included) into JSON strings, which makes invalid JSON; llama.cpp's own
# converter excludes them. We patch the one rule.
_LOOSE_CHAR_RULE = 'char ::= [^"\\\\] |'
_STRICT_CHAR_RULE = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


@lru_cache(maxsize=32)
def _grammar_text(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(schema_json)
    return grammar.replace(_LOOSE_CHAR_RULE, _STRICT_CHAR_RULE)


class LlamaCppBackend:
    name = "llama-cpp"

    def __init__(self, model_path: str, options: BackendOptions) -> None:
        import llama_cpp

        path = Path(model_path)
        if path.suffix.lower() != ".gguf":
            raise BackendUnavailable(f"{path}: the llama-cpp backend loads .gguf files only")
        model_file.check_gguf_header(path)
        offloads = options.n_gpu_layers != 0 and llama_cpp.llama_supports_gpu_offload()
        if not offloads:  # weights on a GPU do not need this machine's memory
            model_file.check_fits_in_memory(path)
        self._llama_cpp = llama_cpp
        try:
            self.llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=options.n_ctx,
                n_threads=options.n_threads,
                n_threads_batch=options.n_threads,  # prompt processing too (None: default)
                n_gpu_layers=options.n_gpu_layers,
                use_mmap=options.use_mmap,
                seed=0,
                verbose=False,
            )
        except ValueError as exc:
            if str(exc).startswith("Failed to load model from file"):
                raise model_file.load_failure(path, exc) from exc
            raise BackendUnavailable(f"{path}: llama.cpp could not load the model: {exc}") from exc
        except RuntimeError as exc:
            raise BackendUnavailable(f"{path}: llama.cpp could not load the model: {exc}") from exc
        if options.lora_path:
            load_lora(self.llama, options.lora_path)
        try:
            self._allow_sequences(options.parallel + 1)
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(
                f"{path}: llama.cpp could not make a context of {options.n_ctx} tokens for "
                f"{options.parallel + 1} sequences ({exc}); lower --n-ctx or --parallel"
            ) from exc
        self.model_path = path
        self.n_ctx = options.n_ctx
        self.parallel = max(1, options.parallel)
        self.prefix_cache = options.prefix_cache
        self.capabilities = Capabilities(
            grammar=True,
            score_distributions=True,
            gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()),
            batching=True,
            tokenizer=True,
            states=True,
            likelihoods=True,
            reply_criteria=True,
        )
        self._n_threads = options.n_threads
        self._state_reader: StateReader | None = None
        self._likelihood_reader: LikelihoodReader | None = None
        self._reply_prompts: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        self._vocab = self.llama._model.vocab
        self._tokens = TokenTable(self._token_pieces())
        self._chat_template = self.llama.metadata.get("tokenizer.chat_template") or None
        self._control_pattern = self._control_token_pattern() if self._chat_template else None
        self._runner = SequenceRunner(self.llama, self.parallel)

    def _allow_sequences(self, n_seq: int) -> None:
        """Give the context room for `n_seq` sequences sharing one KV cache.

        llama-cpp-python makes a one-sequence context; score mode decodes several
        replies side by side, so the context is made again with `n_seq_max` and a
        unified cache (every sequence may use any cell, and a copied prefix shares its
        cells instead of duplicating them). The first context is freed at once.
        """
        from llama_cpp import _internals

        llama = self.llama
        params = llama.context_params
        params.n_seq_max = n_seq
        params.kv_unified = True
        context = _internals.LlamaContext(model=llama._model, params=params, verbose=False)
        llama._ctx.close()
        llama._ctx = llama._stack.enter_context(contextlib.closing(context))
        set_lora(llama, context)

    # -- public --------------------------------------------------------------
    def render_prompt(self, messages: Sequence[Message]) -> str:
        """The model's own chat template, or a plain layout for base models without one."""
        if self._chat_template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            formatter = Jinja2ChatFormatter(
                template=self._chat_template,
                eos_token=self._special_text(self.llama.token_eos()),
                bos_token=self._special_text(self.llama.token_bos()),
            )
            result = formatter(messages=[{"role": m.role, "content": m.content} for m in messages])
            return result.prompt
        parts = [m.content.strip() for m in messages if m.role == "system"]
        for message in messages:
            if message.role == "user" or message.role == "assistant":
                parts.append(message.content.strip())
        return "\n\n".join(parts) + "\n\n"

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """Tokens of the prompt, where message text never becomes a control token.

        Base models without a chat template get plain text (special tokens off).
        With a chat template, the template's markers must be read as control
        tokens, so control-token spellings inside the messages (an answer that
        writes "<end_of_turn>" or "</s>") are broken with a zero-width joiner.
        """
        if not self._chat_template:
            prompt = self.render_prompt(messages)
            return self.llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        safe = [Message(m.role, self._defuse(m.content)) for m in messages]
        prompt = self.render_prompt(safe)
        # The chat template writes its own BOS (as in llama-cpp-python's chat handlers).
        return self.llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def _defuse(self, text: str) -> str:
        if self._control_pattern is None:
            return text
        return self._control_pattern.sub(lambda m: m.group(0)[0] + ZWJ + m.group(0)[1:], text)

    def generate(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        output: OutputSpec | None = None,
    ) -> Generation:
        tokens = self.prompt_tokens(messages)
        if len(tokens) + params.max_tokens > self.n_ctx:
            raise BackendError(
                f"the prompt has {len(tokens)} tokens and up to {params.max_tokens} more may be "
                f"generated, but the context holds {self.n_ctx}: raise n_ctx or shorten the input"
            )
        with self._lock:
            self._runner.drop_workers()
            started = time.perf_counter()
            text, completion, distributions, finish = self._decode(tokens, params, output)
            latency = time.perf_counter() - started
        return Generation(
            text=text,
            prompt_tokens=len(tokens),
            completion_tokens=completion,
            latency_s=latency,
            distributions=tuple(distributions),
            finish_reason=finish,
        )

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(self.prompt_tokens(messages))

    def score_reply_tokens(self, output: OutputSpec) -> int:
        """The bound `score` checks before it reads a reply (so a prompt fitted to the
        context with this much free is never refused)."""
        return reply_token_bound(output, self._tokenize_text)

    def score(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        """Score mode: every request's reply read from probabilities, no free text.

        Requests that share their instructions run together as parallel sequences over
        one evaluated prefix (see `models.backends.sequence_runner`); the time of each
        run is shared out among its requests.
        """
        results: list[Generation | None] = [None] * len(requests)
        jobs: list[tuple[int, list[int], int]] = []
        for index, request in enumerate(requests):
            tokens = self.prompt_tokens(request.messages)
            cells = reply_token_bound(request.output, self._tokenize_text)
            if len(tokens) + cells > self.n_ctx:
                results[index] = Generation(
                    text="",
                    prompt_tokens=len(tokens),
                    error=f"the prompt has {len(tokens)} tokens and the reply needs up to "
                    f"{cells}, but the context holds {self.n_ctx}: raise n_ctx or shorten the "
                    "input",
                )
            else:
                jobs.append((index, tokens, cells))
        with self._lock:
            for group in prefix_groups(jobs, self.prefix_cache):
                self._score_group(requests, group, results)
        return results  # type: ignore[return-value]

    def _score_group(
        self,
        requests: Sequence[ScoreRequest],
        group: list[tuple[int, list[int], int]],
        results: list[Generation | None],
    ) -> None:
        walkers = [self._walker(requests[index]) for index, _, _ in group]
        try:
            replies = self._runner.run(
                [tokens for _, tokens, _ in group],
                [walker.walk for walker in walkers],
                [cells for _, _, cells in group],
                reuse_prefix=self.prefix_cache,
            )
        except (ReplyWalkError, ValueError, RuntimeError) as exc:
            self._forget_cache()
            raise BackendError(f"score mode failed: {exc}") from exc
        share = self._runner.stats.seconds / len(group)
        for (index, tokens, _), reply in zip(group, replies):
            results[index] = Generation(
                text=reply.text,
                prompt_tokens=len(tokens),
                completion_tokens=reply.tokens,
                latency_s=share,
                distributions=tuple(reply.distributions),
                finish_reason="stop",
            )

    def _walker(self, request: ScoreRequest) -> ReplyWalker:
        return ReplyWalker(
            self._tokens,
            self._tokenize_text,
            request.output,
            temperature=request.params.temperature,
            seed=request.params.seed,
        )

    def state_features(self, text: str) -> np.ndarray:
        """Pooled hidden states of `text`, from a reading context made on first use."""
        if self._state_reader is None:
            self._state_reader = StateReader(self.llama, self._n_threads)
        return self._state_reader.features(text)

    def read_answers(
        self,
        request: str,
        answers: Sequence[str],
        unconditioned: bool = True,
        criteria: ReplyCriteria | None = None,
    ) -> list[AnswerReading]:
        """Each answer read as the model's own reply (chat template, end-of-turn token last),
        after `request` and (`unconditioned`) after an empty request: its token
        log-probabilities in both, and the pooled states of the request-read. The
        request-reads come first, so they share the request's tokens. Without the reads
        after none (a head that reads states alone) `uncond` is empty, at half the cost.
        With `criteria`, each request-read goes on to them (models/backends/reply_criteria.py).
        Inputs are not cut here: the caller cuts them."""
        then = continuation(self, criteria) if criteria is not None else None
        cond = [self.read_reply(request, answer, then=then) for answer in answers]
        readings = []
        for given, answer in zip(cond, answers, strict=True):
            if unconditioned:
                free = self.read_reply("", answer, states=False).logprobs
                n = min(len(given.logprobs), len(free))  # each read cut to its context
                logprobs, free = given.logprobs[:n], free[:n]
            else:
                logprobs, free = given.logprobs, given.logprobs[:0]
            states = pooled(given.states)
            reference = given.scored if criteria is not None and criteria.reference else None
            readings.append(
                AnswerReading(logprobs, free, states, criteria=given.values, reference=reference)
            )
        return readings

    def read_reply(
        self, request: str, answer: str, states: bool = True, then: Continuation | None = None
    ) -> ReplyReading:
        """One read: `answer`'s token log-probabilities as the reply to `request` ("": an
        empty request), the final-layer states at the positions that predict them, and the
        values `then` reads on from it."""
        if self._likelihood_reader is None:
            self._likelihood_reader = LikelihoodReader(self.llama, self._n_threads)
        return self._likelihood_reader.read(*self.reply_tokens(request, answer), states, then)

    def reply_tokens(self, request: str, answer: str) -> tuple[list[int], list[int]]:
        """The tokens `read_reply` reads: the prompt before the reply, and the answer with
        the end-of-turn token (uncut: the reader cuts it to what its context holds)."""
        tokens = [*self._tokenize_text(self._defuse(answer)), self._end_of_turn_token()]
        return self._reply_prompt(request), tokens

    def _reply_prompt(self, request: str) -> list[int]:
        """The tokens before the model's reply to `request` (kept: the empty request's is
        the prompt of every request-free read)."""
        if request in self._reply_prompts:
            return self._reply_prompts[request]
        messages = [Message("system", SYSTEM_PROMPT), Message("user", request)]
        try:
            tokens = self.prompt_tokens(messages)
        except Exception:  # a chat template without a system turn (jinja2 raises)
            tokens = self.prompt_tokens(messages[1:])
        if len(self._reply_prompts) > 64:  # one request's pair at a time: keep the empty one
            self._reply_prompts = {k: v for k, v in self._reply_prompts.items() if not k}
        self._reply_prompts[request] = tokens
        return tokens

    @property
    def has_chat_template(self) -> bool:
        return self._chat_template is not None

    @property
    def token_table(self) -> TokenTable:
        return self._tokens

    def end_of_turn_text(self) -> str:
        return self._special_text(self._end_of_turn_token())

    def defused(self, text: str) -> str:
        """`text` with control-token spellings broken (as prompts are written)."""
        return self._defuse(text)

    def _end_of_turn_token(self) -> int:
        eot = self._llama_cpp.llama_vocab_eot(self._vocab)
        return eot if eot >= 0 else self.llama.token_eos()

    def _tokenize_text(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _forget_cache(self) -> None:
        """After a failure the cache may hold anything: start the next call from scratch."""
        self._runner.forget()

    def close(self) -> None:
        for name in ("_state_reader", "_likelihood_reader"):
            reader = getattr(self, name, None)
            if reader is not None:
                reader.close()
                setattr(self, name, None)
        runner = getattr(self, "_runner", None)
        if runner is not None:
            runner.close()
        llama = getattr(self, "llama", None)
        if llama is not None:
            llama.close()
            self.llama = None  # type: ignore[assignment]

    # -- decoding --------------------------------------------------------------
    def _decode(
        self, tokens: list[int], params: SamplingParams, output: OutputSpec | None
    ) -> tuple[str, int, list[ValueDistribution], str]:
        gate = self._grammar_gate(output)
        skeleton = JsonSkeleton(output.json_schema) if gate is not None and output else None
        rng = np.random.default_rng(params.seed)
        state = _RuleState(rules=output.value_rules if output else None, rng=rng, params=params)
        stream = _TokenStream(self, gate, unread=self._reuse_prefix(tokens))
        finish = "length"
        try:
            while len(stream.tokens) < params.max_tokens:
                if skeleton is not None:
                    forced = skeleton.forced_text(stream.tracker)
                    if forced and stream.force(forced, params.max_tokens):
                        if stream.tracker.finished:
                            finish = "stop"
                            break
                        continue
                stream.read()
                logits = self._last_logits()
                constrained = False
                if state.rules is not None:
                    constrained = self._apply_rules(logits, stream.tracker, state)
                if params.repeat_penalty != 1.0 and not constrained:
                    _penalise_repeats(logits, stream.tokens[-REPEAT_WINDOW:], params.repeat_penalty)
                if not constrained and gate is not None and _stuck_in_string(stream):
                    _keep_only(logits, self._tokens.close_string_ids)
                token = choose_token(logits, params.temperature, params.top_p, rng, gate)
                if self._llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    finish = "stop"
                    break
                stream.write([token])
                _end_chosen_value(stream.tracker, state)
                if stream.tracker.finished and gate is not None:
                    finish = "stop"
                    break
                if params.stop and any(stop in stream.tail() for stop in params.stop):
                    finish = "stop"
                    break
        finally:
            if gate is not None:
                gate.close()
        text = stream.text()
        for stop in params.stop:
            if stop in text:
                text = text[: text.index(stop)]
        return text, len(stream.tokens), state.distributions, finish

    def _reuse_prefix(self, tokens: list[int]) -> list[int]:
        """Keep the cached prefix the prompt shares with the last call; the rest of the
        prompt (at least its last token) is returned, still to be evaluated."""
        llama = self.llama
        common = shared_length(llama.input_ids[: llama.n_tokens].tolist(), tokens)
        common = min(common, len(tokens) - 1)
        llama.n_tokens = common
        return tokens[common:]

    def _grammar_gate(self, output: OutputSpec | None) -> GrammarGate | None:
        if output is None or output.json_schema is None:
            return None
        grammar_text = _grammar_text(json.dumps(output.json_schema))
        return GrammarGate(self._llama_cpp, self._vocab, grammar_text)

    def _last_logits(self) -> np.ndarray:
        pointer = self.llama._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(pointer, shape=(self.llama.n_vocab(),))

    def _apply_rules(self, logits: np.ndarray, tracker: JsonTracker, state: _RuleState) -> bool:
        """Apply the value rules at this step; True when the step was constrained."""
        rules = state.rules
        assert rules is not None
        path = tracker.path()
        partial = tracker.partial_value()
        if partial is None and not tracker.expecting_value():
            if tracker.before_value() and rules.constrains(path):
                _keep_only(logits, self._tokens.colon_ids)
                return True
            return False
        rule = rules.rule_for(path, tracker.done)
        if rule is None:
            if partial is None and rules.constrains(path):
                _keep_only(logits, self._tokens.open_ids)
                return True
            return False
        written = partial or ""
        if path not in state.chosen:
            state.chosen[path] = self._choose_value(logits, written, rule, path, state)
        ids, _ = self._tokens.commitments(written, (state.chosen[path],))
        if len(ids):
            _keep_only(logits, ids)
        return True

    def _choose_value(
        self, logits: np.ndarray, written: str, rule: ValueRule, path: Any, state: _RuleState
    ) -> str:
        """Pick the value by its own probability, not by its first token's.

        Greedy decoding over tokens would favour 1 and 10 on a 1-10 scale, which
        share the token "1" in many vocabularies.
        """
        allowed = rule.allowed if rule.allowed is not None else rule.candidates
        if len(allowed) == 1 and not rule.record:
            return allowed[0]
        saved = logits.copy()  # `logits` views llama.cpp's buffer, which a look-ahead overwrites
        probs = self._answer(candidate_probs(self._tokens, saved, written, rule.candidates))
        np.copyto(logits, saved)
        if rule.record:
            entropy = entropy_of(saved)
            state.distributions.append(ValueDistribution(path=path, probs=probs, entropy=entropy))
        return pick_value(probs, allowed, state.params.temperature, state.rng)

    def _answer(self, reading: Reading) -> dict[str, float]:
        """Run a value reading on the one sequence of full generation."""
        llama = self.llama
        try:
            request = next(reading)
            while True:
                if isinstance(request, Feed):
                    llama.eval(list(request.tokens))
                    request = reading.send(self._last_logits().copy())
                else:
                    position = llama.n_tokens - request.count
                    llama._ctx.kv_cache_seq_rm(-1, position, -1)
                    llama.n_tokens = position
                    request = reading.send(None)
        except StopIteration as stop:
            return stop.value

    def _token_pieces(self) -> list[str]:
        model = self.llama._model
        return [
            model.token_to_piece(i).rstrip(b"\0").decode("utf-8", errors="replace")
            for i in range(self.llama.n_vocab())
        ]

    def _control_token_pattern(self) -> re.Pattern[str] | None:
        """A regex matching the spelling of every control or markup-like added token.

        Added ("user defined") tokens count when they look like markup, such as
        chat markers "<|user|>"; plain ones such as runs of newlines stay as they are.
        """
        lib = self._llama_cpp
        control, added = lib.LLAMA_TOKEN_ATTR_CONTROL, lib.LLAMA_TOKEN_ATTR_USER_DEFINED
        texts: set[str] = set()
        for token in range(self.llama.n_vocab()):
            attr = lib.llama_vocab_get_attr(self._vocab, token)
            if not attr & (control | added):
                continue
            text = self._special_text(token)
            if attr & control or any(c in text for c in "<>[]|"):
                texts.add(text)
        texts = sorted((t for t in texts if len(t.strip()) > 1), key=len, reverse=True)
        return re.compile("|".join(re.escape(t) for t in texts)) if texts else None

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return (
            self.llama._model.token_to_piece(token, special=True)
            .rstrip(b"\0")
            .decode("utf-8", errors="replace")
        )


def _keep_only(logits: np.ndarray, ids: np.ndarray) -> None:
    kept = logits[ids].copy()
    logits[:] = -np.inf
    logits[ids] = kept


class _TokenStream:
    """The tokens written so far, kept in step with the grammar and the tracker.

    Tokens are evaluated only when the next logits are needed (`read`): the rest of the
    prompt goes with the text the schema forces at the start, and a chosen value with
    the forced text after it, in one llama.cpp call each. That is one call fewer per
    value, and exactly the calls score mode makes (`reply_walker`), so both modes read
    the same probabilities from the same numbers.
    """

    def __init__(
        self, backend: LlamaCppBackend, gate: GrammarGate | None, unread: Sequence[int] = ()
    ) -> None:
        self._backend = backend
        self._gate = gate
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._unread = list(unread)  # written (or prompt) tokens not evaluated yet
        self.tokens: list[int] = []
        self.pieces: list[str] = []
        self.tracker = JsonTracker()

    def write(self, tokens: list[int], grammar_accepted: bool = False) -> None:
        """Accept tokens into the grammar (unless done already) and feed the tracker."""
        model = self._backend.llama._model
        for token in tokens:
            if self._gate is not None and not grammar_accepted:
                self._gate.accept(token)
            piece = self._decoder.decode(model.token_to_piece(token).rstrip(b"\0"))
            self.tokens.append(token)
            self.pieces.append(piece)
            self.tracker.feed(piece)
        self._unread.extend(tokens)

    def read(self) -> None:
        """Evaluate what is written, so the logits of the next position are there."""
        if self._unread:
            self._backend.llama.eval(self._unread)
            self._unread = []

    def force(self, text: str, max_tokens: int) -> bool:
        """Write schema-forced text; False when the grammar refuses its first token."""
        llama = self._backend.llama
        candidates = llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        room = max_tokens - len(self.tokens)
        accepted: list[int] = []
        for token in candidates[:room]:
            if self._gate is not None and not self._gate.allows(token):
                break
            accepted.append(token)
            if self._gate is not None:
                self._gate.accept(token)
        if not accepted:
            return False
        self.write(accepted, grammar_accepted=True)
        return True

    def tail(self, count: int = 8) -> str:
        return "".join(self.pieces[-count:])

    def text(self) -> str:
        return "".join(self.pieces) + self._decoder.decode(b"", final=True)


def _stuck_in_string(stream: _TokenStream) -> bool:
    """A free-text string whose last tokens are one token repeated: a small model looping.

    The string is closed rather than left to run to its length limit.
    """
    partial = stream.tracker.partial_value()
    if partial is None or not partial.startswith('"'):
        return False
    last = stream.tokens[-LOOP_TOKENS:]
    return len(last) == LOOP_TOKENS and len(set(last)) == 1


def _end_chosen_value(tracker: JsonTracker, state: _RuleState) -> None:
    """A number that reached its chosen value is complete: let the skeleton close it."""
    chosen = state.chosen.get(tracker.path())
    if chosen is not None and tracker.partial_value() == chosen:
        tracker.end_scalar()


def _penalise_repeats(logits: np.ndarray, recent: list[int], penalty: float) -> None:
    """llama.cpp's repeat penalty: shrink the logits of recently written tokens."""
    if not recent:
        return
    ids = np.unique(np.array(recent, dtype=np.int64))
    values = logits[ids]
    logits[ids] = np.where(values > 0, values / penalty, values * penalty)
