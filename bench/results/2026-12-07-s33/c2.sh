#!/usr/bin/env bash
# s33 call 2: c1.sh cut to what fits the session's last device minutes, most wanted first: tvl (test_gdn,
# test_attention_mm, test_attention_refused on cooperative matrices), then pp512 of the 2B and the 35B (256
# experts), e6f07fa's zinc (zinc0) against gdn_tc 16 (staged, single-float lanes: its bits), with vec4 lanes, and
# gdn_rows 2, alternated.
QUICK=1 exec bash "$(dirname "$0")/c1.sh"
