"""Step 2 of the demo model: train a tiny Qwen3.5 (Gated DeltaNet + gated
attention) with Hugging Face transformers, then record what the parity check
needs. Runs on one GPU (it was run on an H200; a few minutes).

  python3 train.py --data DIR --out OUT [--steps N | --train-seconds S]

DIR holds data.npz, prompts.json, bpe.py and merges.txt from prepare.py.
OUT receives: w0..w2.safetensors (the best checkpoint by validation loss,
f32, split so no file exceeds 16 MB), ref.json (config, tensor list, losses,
prompt ids, greedy continuations) and ref_logits.npz (f32 logits of every
prompt position, computed on the CPU in f32).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

SEED = 1234
LAYERS = 8
FULL_ATTN_INTERVAL = 4


def make_config(vocab, eot):
    try:
        from transformers import Qwen3_5TextConfig
    except ImportError:
        from transformers.models.qwen3_5 import Qwen3_5TextConfig
    layer_types = ["full_attention" if (i + 1) % FULL_ATTN_INTERVAL == 0 else "linear_attention"
                   for i in range(LAYERS)]
    return Qwen3_5TextConfig(
        vocab_size=vocab, hidden_size=256, intermediate_size=640, num_hidden_layers=LAYERS,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        linear_conv_kernel_dim=4, linear_key_head_dim=64, linear_value_head_dim=64,
        linear_num_key_heads=4, linear_num_value_heads=4,
        layer_types=layer_types, full_attention_interval=FULL_ATTN_INTERVAL,
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [3, 3, 2], "mrope_interleaved": True},
        bos_token_id=eot, eos_token_id=eot, pad_token_id=eot,
    )


def save_weights(model, out):
    from safetensors.torch import save_file
    sd = {k: v.detach().float().cpu().contiguous() for k, v in model.state_dict().items()}
    shards, cur, size = [], {}, 0
    for k in sorted(sd):
        nb = sd[k].numel() * 4
        if cur and size + nb > 14_000_000:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = sd[k]
        size += nb
    shards.append(cur)
    for i, s in enumerate(shards):
        save_file(s, os.path.join(out, f"w{i}.safetensors"))
    return {k: list(v.shape) for k, v in sd.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=0, help="fixed step count (else fit --train-seconds)")
    ap.add_argument("--train-seconds", type=float, default=240)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--chat-fraction", type=float, default=0.25)
    args = ap.parse_args()
    t0 = time.time()
    log = lambda s: print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

    import transformers
    from transformers import Qwen3_5ForCausalLM
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, cuda {torch.cuda.is_available()}")
    sys.path.insert(0, args.data)
    meta = json.load(open(os.path.join(args.data, "prompts.json")))
    d = np.load(os.path.join(args.data, "data.npz"))
    train = torch.from_numpy(d["train"].astype(np.int64))
    val = torch.from_numpy(d["val"].astype(np.int64))
    chat = torch.from_numpy(d["chat"].astype(np.int64))
    chat_starts = d["chat_starts"]
    chat_starts = chat_starts[chat_starts + args.seq + 1 <= len(chat)]
    log(f"tokens: train {len(train)}, val {len(val)}, chat {len(chat)}")

    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    dev = torch.device("cuda")
    cfg = make_config(meta["vocab_size"], meta["eot"])
    model = Qwen3_5ForCausalLM(cfg).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"config: {cfg.to_json_string()}")
    rot = getattr(getattr(model.model, "rotary_emb", None), "inv_freq", None)
    log(f"{n_params} parameters; rotary inv_freq {None if rot is None else tuple(rot.shape)}")
    for k, v in model.state_dict().items():
        if ".layers." not in k or ".layers.0." in k or ".layers.3." in k:
            log(f"  {k} {tuple(v.shape)}")

    T, B = args.seq, args.batch
    n_chat = int(round(B * args.chat_fraction))

    def batch():
        starts = rng.integers(0, len(train) - T - 1, B - n_chat)
        rows = [train[s:s + T + 1] for s in starts]
        rows += [chat[s:s + T + 1] for s in rng.choice(chat_starts, n_chat)]
        x = torch.stack(rows).to(dev, non_blocking=True)
        return x[:, :-1], x[:, 1:]

    val_starts = np.linspace(0, len(val) - T - 1, 32).astype(np.int64)
    val_x = torch.stack([val[s:s + T + 1] for s in val_starts]).to(dev)

    @torch.no_grad()
    def val_loss():
        model.eval()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=val_x[:, :-1], use_cache=False).logits
        model.train()
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), val_x[:, 1:].reshape(-1)).item()

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), fused=True)
    warmup = 100
    total = args.steps or 10 ** 9
    lr_at = lambda s: args.lr * min(1.0, (s + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / total))))

    model.train()
    best, best_step, losses = float("inf"), -1, []
    tstart, step, shapes = time.time(), 0, None
    while step < total:
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = batch()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x, use_cache=False).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step == 30 and not args.steps:
            torch.cuda.synchronize()
            per = (time.time() - tstart) / 30
            total = max(200, int(args.train_seconds / per))
            log(f"{per * 1000:.0f} ms/step -> {total} steps in {args.train_seconds:.0f}s (rerun with --steps {total})")
        if step % 50 == 0:
            log(f"step {step}/{total} loss {loss.item():.4f} lr {lr_at(step):.2e}")
        if step % 200 == 0 or step == total:
            vl = val_loss()
            losses.append((step, loss.item(), vl))
            log(f"step {step} val {vl:.4f}")
            if vl < best:
                best, best_step = vl, step
                shapes = save_weights(model, args.out)
    log(f"trained {step} steps in {time.time() - tstart:.0f}s; best val {best:.4f} at step {best_step}")

    # Reference outputs from the saved (best) weights, f32 on the CPU.
    from safetensors.torch import load_file
    sd = {}
    for f in sorted(os.listdir(args.out)):
        if f.startswith("w") and f.endswith(".safetensors"):
            sd.update(load_file(os.path.join(args.out, f)))
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    ref = Qwen3_5ForCausalLM(cfg).float()
    ref.load_state_dict(sd)
    ref.eval()
    out = {"config": cfg.to_dict(), "tensors": shapes, "n_params": n_params, "steps": step,
           "best_step": best_step, "best_val": best, "losses": losses, "seed": SEED, "args": vars(args),
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__}, "prompts": []}
    logits_out = {}
    import bpe
    tok = bpe.Tokenizer(bpe.load_merges(os.path.join(args.data, "merges.txt")))
    with torch.no_grad():
        for i, p in enumerate(meta["prompts"]):
            ids = torch.tensor([p["ids"]])
            logits_out[f"logits_{i}"] = ref(input_ids=ids, use_cache=False).logits[0].numpy().astype(np.float32)
            seq = list(p["ids"])
            for _ in range(32):  # greedy, full recompute each step (no cache)
                seq.append(int(ref(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1].argmax()))
            greedy = seq[len(p["ids"]):]
            entry = {"text": p["text"], "ids": p["ids"], "greedy": greedy, "greedy_text": tok.decode(greedy)}
            try:  # the cached decode path (recurrent gated delta rule) as a cross-check
                g = ref.generate(ids, max_new_tokens=32, do_sample=False, pad_token_id=meta["eot"])
                entry["generate"] = g[0, len(p["ids"]):].tolist()
            except Exception as e:  # noqa: BLE001
                entry["generate_error"] = repr(e)
            out["prompts"].append(entry)
            log(f"prompt {i}: {p['text']!r} -> {entry['greedy_text']!r} "
                f"(generate {'matches' if entry.get('generate') == greedy else 'DIFFERS'})")
        torch.manual_seed(SEED)
        s = ref.generate(torch.tensor([tok.encode("The old prince")]), max_new_tokens=120, do_sample=True,
                         temperature=0.8, top_k=40, pad_token_id=meta["eot"])
        log("sample: " + tok.decode(s[0].tolist()))
    np.savez(os.path.join(args.out, "ref_logits.npz"), **logits_out)
    with open(os.path.join(args.out, "ref.json"), "w") as f:
        json.dump(out, f)
    log("done")


if __name__ == "__main__":
    main()
