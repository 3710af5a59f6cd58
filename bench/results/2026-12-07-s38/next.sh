#!/usr/bin/env bash
# s38's next call (not run: the device budget ran out), in this order as the budget allows; each part is its own call
# (the carries differ). Build: rm -rf .dev && bash bench/device-build.sh && rm .dev/tvl .dev/vk-attn; make load;
# cp build/zinc-load .dev/ && strip .dev/zinc-load; cp ../shared/peers/side-by-side.sh .dev/; xz -9 .dev/zinc .dev/zinc-load.
#   PART=sbs  (carry .dev .gl .ll):  issue 15's side-by-side of the 8B and the 2B, every test (the 35B's is in c2).
#   PART=npl  (carry .dev .gl .dev-keep/llb):  issue 14's -npl table against llama-batched-bench, every shape.
#   PART=load (carry .dev .gl):  the server under load at HEAD (the block-skipping scan, sampler_set, sampling
#             threads by backend), against c2's 1,532 tok/s at 32 clients; /metrics' host share of the engine thread.
for f in .dev/*.xz; do xz -dc $f > ${f%.xz} && chmod +x ${f%.xz}; done
case ${PART:-sbs} in
  sbs) LIMIT=560 SHAPES="qwen3-8b qwen3.5-2b" bash bench/results/2026-12-07-s36/sbs.sh ;;
  npl) bash bench/results/2026-12-07-s36/npl.sh ;;
  load) . bench/device-env.sh; syn qwen3-8b
    for sw in 0 400; do
      SYSTEM_WORDS=$sw CTX=2048 OUT=$O/load-$sw COMMIT=$(cat .dev/commit) timeout 150 tools/load/h200.sh .dev/zinc \
        .dev/zinc-load /tmp/sbs-models/qwen3-8b.gguf 2>&1 | grep -vE "^\\$" | tail -5
      grep -E "^zinc_engine_(step|host)_seconds|^zinc_engine_steps" $O/load-$sw/zinc-metrics.txt
    done ;;
esac
