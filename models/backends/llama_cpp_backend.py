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

import contextlib
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
)
from models.backends.chat_text import ChatText
from models.backends.grammar_gate import GrammarGate, choose_token, schema_grammar
from models.backends.json_skeleton import JsonSkeleton
from models.backends.json_tracker import JsonTracker
from models.backends.likelihood_reader import Continuation, Readers
from models.backends.likelihood_reader import Reading as ReplyReading
from models.backends.reply_criteria import continuation, split_check
from models.backends.reply_walker import ReplyWalker, ReplyWalkError, reply_token_bound
from models.backends.sequence_runner import SequenceRunner, prefix_groups, shared_length
from models.backends.state_reader import StateReader, load_lora, set_lora
from models.backends.token_stream import (
    REPEAT_WINDOW,
    RuleState,
    TokenStream,
    end_chosen_value,
    keep_only,
    penalise_repeats,
    stuck_in_string,
)
from models.backends.value_constraints import TokenTable, entropy_of
from models.backends.value_reader import Feed, Reading, candidate_probs, pick_value
from models.foundation.errors import BackendError, BackendUnavailable
from models.readings import AnswerReading, ReplyCriteria, pooled


def create(model_path: str, options: BackendOptions) -> LlamaCppBackend:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BackendUnavailable(
            "the llama-cpp backend needs llama-cpp-python: run `make setup` "
            "(or `pip install llama-cpp-python==0.3.36`)"
        ) from exc
    return LlamaCppBackend(model_path, options)


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
        self._likelihood_readers = Readers(self.llama, self._n_threads)
        self._lock = threading.Lock()
        self._vocab = self.llama._model.vocab
        self._text = ChatText(self.llama, llama_cpp)
        self._tokens = TokenTable(self._text.token_pieces())
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

    # -- text and tokens (models/backends/chat_text.py) ----------------------------
    def render_prompt(self, messages: Sequence[Message]) -> str:
        """The model's own chat template, or a plain layout for base models without one."""
        return self._text.render(messages)

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """Tokens of the prompt, where message text never becomes a control token."""
        return self._text.prompt_tokens(messages)

    def reply_tokens(self, request: str, answer: str) -> tuple[list[int], list[int]]:
        """The tokens `read_reply` reads: the prompt before the reply, and the answer with
        the end-of-turn token (uncut: the reader cuts it to what its context holds)."""
        return self._text.reply_tokens(request, answer)

    def _reply_prompt(self, request: str) -> list[int]:
        return self._text.reply_prompt(request)

    def _end_of_turn_token(self) -> int:
        return self._text.end_of_turn_token()

    def _tokenize_text(self, text: str) -> list[int]:
        return self._text.tokenize(text)

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
            text, written, logprobs, distributions, finish = self._decode(tokens, params, output)
            latency = time.perf_counter() - started
        return Generation(
            text=text,
            prompt_tokens=len(tokens),
            completion_tokens=written,
            latency_s=latency,
            distributions=tuple(distributions),
            finish_reason=finish,
            mean_logprob=float(np.mean(logprobs)) if logprobs else None,
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
        adapter: str | None = None,
    ) -> list[AnswerReading]:
        """Each answer read as the model's own reply (chat template, end-of-turn token last),
        after `request` and (`unconditioned`) after an empty request: its token
        log-probabilities in both, and the pooled states of the request-read. The
        request-reads come first, so they share the request's tokens. Without the reads
        after none (a head that reads states alone) `uncond` is empty, at half the cost.
        With `criteria`, each request-read goes on to them (models/backends/reply_criteria.py);
        `adapter`: with that GGUF LoRA file (likelihood_reader.Readers). Inputs are not cut."""
        then = continuation(self, criteria) if criteria is not None else None
        cond = [self.read_reply(request, answer, then=then, adapter=adapter) for answer in answers]
        readings = []
        for given, answer in zip(cond, answers, strict=True):
            if unconditioned:
                free = self.read_reply("", answer, states=False, adapter=adapter).logprobs
                n = min(len(given.logprobs), len(free))  # each read cut to its context
                logprobs, free = given.logprobs[:n], free[:n]
            else:
                logprobs, free = given.logprobs, given.logprobs[:0]
            states = pooled(given.states)
            reference = given.scored if criteria is not None and criteria.reference else None
            values, check = split_check(given.values, criteria)
            readings.append(
                AnswerReading(
                    logprobs, free, states, criteria=values, reference=reference, check=check
                )
            )
        return readings

    def read_reply(
        self, request: str, answer: str, states: bool = True, then: Continuation | None = None,
        adapter: str | None = None,
    ) -> ReplyReading:  # fmt: skip
        """One read: `answer`'s token log-probabilities as the reply to `request` ("": an
        empty request), the final-layer states at the positions that predict them, and the
        values `then` reads on from it; `adapter`: with that GGUF LoRA file."""
        tokens = self.reply_tokens(request, answer)
        return self._likelihood_readers.get(adapter).read(*tokens, states, then)

    @property
    def has_chat_template(self) -> bool:
        return self._text.template is not None

    @property
    def token_table(self) -> TokenTable:
        return self._tokens

    def end_of_turn_text(self) -> str:
        return self._text.special_text(self._text.end_of_turn_token())

    def defused(self, text: str) -> str:
        """`text` with control-token spellings broken (as prompts are written)."""
        return self._text.defuse(text)

    def _forget_cache(self) -> None:
        """After a failure the cache may hold anything: start the next call from scratch."""
        self._runner.forget()

    def close(self) -> None:
        for name in ("_state_reader", "_likelihood_readers"):
            reader = getattr(self, name, None)
            if reader is not None:
                reader.close()
        self._state_reader = None
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
    ) -> tuple[str, int, list[float], list[ValueDistribution], str]:
        """The reply's text, its token count, the log-probability of each token chosen
        (under the logits it was chosen from; a forced token has none), the values'
        distributions and why it stopped."""
        gate = self._grammar_gate(output)
        skeleton = JsonSkeleton(output.json_schema) if gate is not None and output else None
        rng = np.random.default_rng(params.seed)
        state = RuleState(rules=output.value_rules if output else None, rng=rng, params=params)
        stream = TokenStream(self.llama, gate, unread=self._reuse_prefix(tokens))
        finish = "length"
        logprobs: list[float] = []
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
                    penalise_repeats(logits, stream.tokens[-REPEAT_WINDOW:], params.repeat_penalty)
                if not constrained and gate is not None and stuck_in_string(stream):
                    keep_only(logits, self._tokens.close_string_ids)
                token = choose_token(logits, params.temperature, params.top_p, rng, gate)
                if self._llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    finish = "stop"
                    break
                stream.write([token])
                top = float(logits.max())  # the token's log-probability: log-softmax
                spread = float(np.log(np.exp(logits - top).sum(dtype=np.float64)))
                logprobs.append(float(logits[token]) - top - spread)
                end_chosen_value(stream.tracker, state)
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
        return text, len(stream.tokens), logprobs, state.distributions, finish

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
        grammar = schema_grammar(json.dumps(output.json_schema))
        return GrammarGate(self._llama_cpp, self._vocab, grammar)

    def _last_logits(self) -> np.ndarray:
        pointer = self.llama._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(pointer, shape=(self.llama.n_vocab(),))

    def _apply_rules(self, logits: np.ndarray, tracker: JsonTracker, state: RuleState) -> bool:
        """Apply the value rules at this step; True when the step was constrained."""
        rules = state.rules
        assert rules is not None
        path = tracker.path()
        partial = tracker.partial_value()
        if partial is None and not tracker.expecting_value():
            if tracker.before_value() and rules.constrains(path):
                keep_only(logits, self._tokens.colon_ids)
                return True
            return False
        rule = rules.rule_for(path, tracker.done)
        if rule is None:
            if partial is None and rules.constrains(path):
                keep_only(logits, self._tokens.open_ids)
                return True
            return False
        written = partial or ""
        if path not in state.chosen:
            state.chosen[path] = self._choose_value(logits, written, rule, path, state)
        ids, _ = self._tokens.commitments(written, (state.chosen[path],))
        if len(ids):
            keep_only(logits, ids)
        return True

    def _choose_value(
        self, logits: np.ndarray, written: str, rule: ValueRule, path: Any, state: RuleState
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
