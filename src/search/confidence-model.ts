// Written by `npm run fit:confidence -- --write` (src/cli/fit-confidence.ts); do not edit by hand.
// Fitted on the dev splits of: bfcl, livemcpbench, sealtools, toolbench_stable (top 10 of each query, hybrid).
export const FITTED_CONFIDENCE = {
  "version": 1,
  "features": [
    "fused_recip",
    "bm25_present",
    "bm25_recip",
    "bm25_rel",
    "bm25_best_log",
    "vector_present",
    "vector_recip",
    "cosine",
    "cosine_gap",
    "cosine_best",
    "server_vote",
    "exact_name"
  ],
  "weights": [
    0.397178,
    -0.31931,
    0.124565,
    1.14459,
    0.897834,
    0.274745,
    0.0993944,
    -0.150025,
    -0.433847,
    -0.0837883,
    0.172804,
    0.0919673
  ],
  "bias": -2.30781,
  "means": [
    0.292897,
    0.887445,
    0.250314,
    0.540498,
    3.35458,
    0.836154,
    0.186295,
    0.457876,
    0.076801,
    0.633498,
    0.420654,
    0.00135288
  ],
  "scales": [
    0.263037,
    0.316048,
    0.287795,
    0.303729,
    0.629758,
    0.370135,
    0.260498,
    0.234022,
    0.0741734,
    0.110035,
    0.493664,
    0.0367567
  ]
};
