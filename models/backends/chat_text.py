"""How text becomes the model's tokens: its chat template, its control tokens defused in
message text, and the tokens before and of a reply the likelihood reads read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from models.backends.base import Message
from models.readings import SYSTEM_PROMPT

ZWJ = "\u200d"  # zero-width joiner: keeps text readable, breaks a control-token spelling


class ChatText:
    """The chat template and tokenizer of one loaded llama.cpp model (`llama`)."""

    def __init__(self, llama: Any, lib: Any) -> None:
        self.llama = llama
        self._lib = lib  # the llama_cpp module (its low-level vocabulary calls)
        self._vocab = llama._model.vocab
        self.template: str | None = llama.metadata.get("tokenizer.chat_template") or None
        self._control = self._control_token_pattern() if self.template else None
        self._reply_prompts: dict[str, list[int]] = {}

    def render(self, messages: Sequence[Message]) -> str:
        """The model's own chat template, or a plain layout for base models without one."""
        if self.template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            formatter = Jinja2ChatFormatter(
                template=self.template,
                eos_token=self.special_text(self.llama.token_eos()),
                bos_token=self.special_text(self.llama.token_bos()),
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
        if not self.template:
            prompt = self.render(messages)
            return self.llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        safe = [Message(m.role, self.defuse(m.content)) for m in messages]
        prompt = self.render(safe)
        # The chat template writes its own BOS (as in llama-cpp-python's chat handlers).
        return self.llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def defuse(self, text: str) -> str:
        if self._control is None:
            return text
        return self._control.sub(lambda m: m.group(0)[0] + ZWJ + m.group(0)[1:], text)

    def reply_prompt(self, request: str) -> list[int]:
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

    def reply_tokens(self, request: str, answer: str) -> tuple[list[int], list[int]]:
        """The tokens `read_reply` reads: the prompt before the reply, and the answer with
        the end-of-turn token (uncut: the reader cuts it to what its context holds)."""
        tokens = [*self.tokenize(self.defuse(answer)), self.end_of_turn_token()]
        return self.reply_prompt(request), tokens

    def end_of_turn_token(self) -> int:
        eot = self._lib.llama_vocab_eot(self._vocab)
        return eot if eot >= 0 else self.llama.token_eos()

    def tokenize(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def token_pieces(self) -> list[str]:
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
        lib = self._lib
        control, added = lib.LLAMA_TOKEN_ATTR_CONTROL, lib.LLAMA_TOKEN_ATTR_USER_DEFINED
        texts: set[str] = set()
        for token in range(self.llama.n_vocab()):
            attr = lib.llama_vocab_get_attr(self._vocab, token)
            if not attr & (control | added):
                continue
            text = self.special_text(token)
            if attr & control or any(c in text for c in "<>[]|"):
                texts.add(text)
        texts = sorted((t for t in texts if len(t.strip()) > 1), key=len, reverse=True)
        return re.compile("|".join(re.escape(t) for t in texts)) if texts else None

    def special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return (
            self.llama._model.token_to_piece(token, special=True)
            .rstrip(b"\0")
            .decode("utf-8", errors="replace")
        )
