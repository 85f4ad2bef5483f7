"""LoRA fine-tuning on the canary corpus and memorization measurement (beyond the paper).

The training set is one window of the planted file around every canary (``context_lines`` before
the snippet, the snippet, two lines after) plus ``clean_windows`` seeded canary-free windows. A
LoRA adapter (``peft``, attention and MLP projections) is trained with AdamW on CPU in fp32, causal
LM loss on every token, gradients clipped to ``max_grad_norm`` (LoRA at lr >= 1e-3 diverged
without clipping). A canary is memorized when the greedy completion of its own prefix starts with
the exact value (Carlini et al. 2019); its mean token NLL is recorded too. The adapter is then
merged (``merge_and_unload``) for GGUF write-back. Functions take any HF causal LM and tokenizer,
so tests use a tiny random model; settings: ``canary.finetune`` (:class:`testleak.settings.Finetune`).
"""

from __future__ import annotations

import random
import time
from typing import Callable, Mapping, Sequence

from ..errors import ConfigError
from ..settings import Finetune


def build_examples(texts: Mapping[str, str], truth: Sequence[Mapping], context_lines: int, clean_windows: int,
                   seed: int, window_lines: int = 14) -> tuple[list[dict], list[dict]]:
    """(training examples, memorization probes).

    One training example per planted copy (a canary of duplication k gives k windows, each with
    its own surrounding code); one probe per canary (its first copy). ``texts``: planted file
    text by ``repo/path`` (the ground truth's ``file``). A training
    example is ``{"text", "canary_id"}``; a probe is ``{"canary_id", "prefix", "value"}`` where
    ``prefix`` is the example text up to the value.
    """
    examples, probes, used = [], [], {}
    for t in truth:
        copies = t.get("copies") or [{"file": t["file"], "line": t["line"]}]
        for j, cp in enumerate(copies):
            text = texts.get(cp["file"])
            if text is None:
                raise ConfigError(f"ground truth names {cp['file']}, which is not in the canary corpus: rerun canary_corpus")
            lines = text.splitlines(keepends=True)
            start = max(0, cp["line"] - 1 - context_lines)
            n_snip = t["context"].count("\n")
            end = min(len(lines), cp["line"] - 1 + n_snip + 2)
            window = "".join(lines[start:end])
            pos = window.find(t["line_prefix"] + t["value"])
            if pos < 0:
                raise ConfigError(f"canary {t['id']} not found at {cp['file']}:{cp['line']}: rerun canary_corpus")
            cut = pos + len(t["line_prefix"])
            examples.append({"text": window, "canary_id": t["id"]})
            if j == 0:  # the memorization and exposure probe: the first copy's window up to the value
                probes.append({"canary_id": t["id"], "attribute": t["attribute"], "prefix": window[:cut],
                               "value": t["value"]})
            used.setdefault(cp["file"], []).append(range(start, end))
    rng = random.Random(seed)
    files = sorted(texts)
    tries = 0
    clean = 0
    while clean < clean_windows and files and tries < clean_windows * 20:
        tries += 1
        f = rng.choice(files)
        lines = texts[f].splitlines(keepends=True)
        wl = min(window_lines, len(lines) // 3)
        if wl < 3:
            continue
        s = rng.randrange(0, len(lines) - wl)
        if any(s < r.stop and s + wl > r.start for r in used.get(f, [])):
            continue
        examples.append({"text": "".join(lines[s:s + wl]), "canary_id": None})
        used.setdefault(f, []).append(range(s, s + wl))
        clean += 1
    return examples, probes


def add_lora(model, settings: Finetune):
    """``model`` with a LoRA adapter (``canary.finetune``: rank, alpha, dropout) on the target
    modules it has."""
    from peft import LoraConfig, get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    targets = [t for t in settings.target_modules if t in names]
    if not targets:
        raise ConfigError(f"none of canary.finetune.target_modules {list(settings.target_modules)} is a module of the model")
    cfg = LoraConfig(r=settings.lora_r, lora_alpha=settings.lora_alpha, lora_dropout=settings.lora_dropout,
                     target_modules=targets, bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def _batches(examples: list[dict], tokenizer, settings: Finetune, rng: random.Random):
    import torch

    order = list(range(len(examples)))
    rng.shuffle(order)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    for i in range(0, len(order), settings.batch_size):
        ids = [tokenizer(examples[j]["text"], add_special_tokens=False)["input_ids"][: settings.max_tokens]
               for j in order[i:i + settings.batch_size]]
        n = max(len(x) for x in ids)
        inp = torch.full((len(ids), n), pad, dtype=torch.long)
        att = torch.zeros((len(ids), n), dtype=torch.long)
        for r, x in enumerate(ids):
            inp[r, :len(x)] = torch.tensor(x)
            att[r, :len(x)] = 1
        labels = inp.masked_fill(att == 0, -100)
        yield inp, att, labels, int(att.sum())


def train_lora(model, tokenizer, examples: list[dict], settings: Finetune, seed: int,
               probes: Sequence[Mapping] | None = None, log: Callable[[dict], None] | None = None):
    """Train a LoRA adapter on ``examples`` with ``canary.finetune`` ``settings``, seeded by
    ``seed`` (``canary.seed``: weight init and batch order); returns (peft model, history).

    history: one dict per epoch {epoch, loss, steps, tokens, seconds, memorized?}."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(max(1, int(settings.threads)))
    if not examples:
        raise ConfigError("no training examples: the canary corpus is empty")
    peft_model = add_lora(model, settings)
    peft_model.train()
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=settings.lr)
    rng = random.Random(seed)
    history, step = [], 0
    for epoch in range(1, settings.epochs + 1):
        t0, losses, tokens, steps = time.perf_counter(), [], 0, 0
        for inp, att, labels, ntok in _batches(examples, tokenizer, settings, rng):
            out = peft_model(input_ids=inp, attention_mask=att, labels=labels)
            out.loss.backward()
            if settings.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(trainable, settings.max_grad_norm)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(float(out.loss.detach()))
            tokens += ntok
            steps += 1
            step += 1
            if settings.max_steps and step >= settings.max_steps:
                break
        rec = {"epoch": epoch, "loss": sum(losses) / max(1, len(losses)), "steps": steps, "tokens": tokens,
               "seconds": round(time.perf_counter() - t0, 3)}
        if probes and settings.eval_every and epoch % settings.eval_every == 0 and epoch < settings.epochs:
            rec["memorized"] = memorization_rate(memorization(peft_model, tokenizer, probes))
            peft_model.train()
        history.append(rec)
        if log:
            log(rec)
        if settings.max_steps and step >= settings.max_steps:
            break
    return peft_model, history


def score_continuations(model, tokenizer, prefix: str, continuations: Sequence[str],
                        batch_tokens: int = 512) -> list[tuple[float, int]]:
    """Log-likelihood of every continuation given ``prefix``: [(sum of natural-log token
    probabilities, number of tokens)], in the order given. The one sequence-scoring function of
    the canary code (memorization NLL and exposure both use it).

    Tokenization: the prefix and each continuation are tokenized separately and concatenated,
    so every continuation is scored after the same prefix tokens (a joint tokenization could
    merge the prefix's last characters with the value's first ones differently per value).
    Efficiency on CPU: one forward of the prefix (``use_cache``), its KV cache copied and
    repeated for each batch of continuations, which are sorted by length and batched up to
    ``batch_tokens`` (continuation tokens x batch; the logits of a batch take
    batch_tokens x vocabulary x 4 bytes, ~0.3 GB at 512 for a 152k vocabulary).
    """
    import torch

    pre = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    if not pre:
        raise ValueError("score_continuations needs a non-empty prefix")
    conts = [tokenizer(c, add_special_tokens=False)["input_ids"] for c in continuations]
    if any(not c for c in conts):
        raise ValueError("score_continuations got an empty continuation")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    model.eval()
    out: list[tuple[float, int] | None] = [None] * len(conts)
    with torch.no_grad():
        head = model(input_ids=torch.tensor([pre]), attention_mask=torch.ones(1, len(pre), dtype=torch.long),
                     use_cache=True)
        cache = head.cache
        first = torch.log_softmax(head.logits[0, -1].float(), dim=-1)
        order = sorted(range(len(conts)), key=lambda i: len(conts[i]))
        i = 0
        while i < len(order):
            j = i + 1
            while j < len(order) and (j + 1 - i) * len(conts[order[j]]) <= batch_tokens:
                j += 1
            totals = _score_batch(model, cache, first, [conts[k] for k in order[i:j]], len(pre), pad)
            for k, tot in zip(order[i:j], totals.tolist()):
                out[k] = (float(tot), len(conts[k]))
            i = j
    return out  # type: ignore[return-value]


def _score_batch(model, cache, first, batch: list[list[int]], pre_len: int, pad: int):
    """Summed log-probabilities of the token lists ``batch`` after the prefix whose KV ``cache``
    and next-token log-probabilities ``first`` are given: one forward of the batch, padded."""
    import copy

    import torch

    longest = max(len(c) for c in batch)
    lp0 = first[torch.tensor([c[0] for c in batch])]
    if longest == 1:
        return lp0
    n = len(batch)
    inp = torch.full((n, longest - 1), pad, dtype=torch.long)
    tgt = torch.zeros((n, longest - 1), dtype=torch.long)
    keep = torch.zeros((n, longest - 1), dtype=torch.bool)
    for r, c in enumerate(batch):
        inp[r, :len(c) - 1] = torch.tensor(c[:-1], dtype=torch.long)
        tgt[r, :len(c) - 1] = torch.tensor(c[1:], dtype=torch.long)
        keep[r, :len(c) - 1] = True
    att = torch.cat([torch.ones((n, pre_len), dtype=torch.long), keep.long()], dim=1)
    c = copy.deepcopy(cache)
    c.batch_repeat_interleave(n)
    logits = model(input_ids=inp, attention_mask=att, cache=c, use_cache=True).logits
    lp = torch.log_softmax(logits.float(), dim=-1).gather(2, tgt[:, :, None])[:, :, 0]
    return lp0 + (lp * keep).sum(dim=1)


def memorization(model, tokenizer, probes: Sequence[Mapping], extra_tokens: int = 2) -> list[dict]:
    """Greedy completion of every probe's value from its prefix, and the value's mean NLL
    (per token, :func:`score_continuations`).

    Returns [{canary_id, attribute, memorized, matched_chars, value_len, nll}] (no raw values)."""
    import torch

    model.eval()
    out = []
    with torch.no_grad():
        for p in probes:
            pre = tokenizer(p["prefix"], add_special_tokens=False)["input_ids"]
            n_val = max(1, len(tokenizer(p["value"], add_special_tokens=False)["input_ids"]))
            ids = torch.tensor([pre])
            gen = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n_val + extra_tokens,
                                 do_sample=False, pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id or 0)
            cont = tokenizer.decode(gen[0, len(pre):], skip_special_tokens=True)
            matched = 0
            for a, b in zip(cont, p["value"]):
                if a != b:
                    break
                matched += 1
            (total, k), = score_continuations(model, tokenizer, p["prefix"], [p["value"]])
            out.append({"canary_id": p["canary_id"], "attribute": p.get("attribute"),
                        "memorized": cont.startswith(p["value"]), "matched_chars": matched,
                        "value_len": len(p["value"]), "nll": round(-total / k, 4)})
    return out


def memorization_rate(rows: Sequence[Mapping]) -> float:
    return sum(1 for r in rows if r["memorized"]) / len(rows) if rows else 0.0


def merged_weights(peft_model) -> tuple[object, list[str]]:
    """Merge the adapter into the base weights; returns (plain model, names of changed HF params)."""
    targets = set(peft_model.peft_config["default"].target_modules)
    merged = peft_model.merge_and_unload()
    changed = [n for n, _ in merged.named_parameters()
               if n.endswith(".weight") and n.rsplit(".", 2)[-2] in targets]
    return merged, changed


def load_gguf_model(gguf_path, dtype: str = "float32"):
    """(a model of the caller's own, to train; tokenizer with a pad token) of a GGUF file
    (:func:`testleak.llm.hf.load_causal_lm`: converted once, then read from the kept copy)."""
    from ..llm.hf import load_causal_lm

    model, tok = load_causal_lm(gguf_path, dtype, shared=False)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok
