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
    0.488882,
    -0.474608,
    -0.0370134,
    1.10326,
    1.02648,
    0.440418,
    0.127687,
    -0.03082,
    -0.394349,
    -0.212505,
    0.128381,
    0.0937448
  ],
  "bias": -2.27374,
  "means": [
    0.292897,
    0.951725,
    0.277736,
    0.587944,
    3.36136,
    0.621349,
    0.140507,
    0.338509,
    0.0566991,
    0.633498,
    0.405065,
    0.00135288
  ],
  "scales": [
    0.263037,
    0.214347,
    0.273541,
    0.264043,
    0.627038,
    0.485051,
    0.244323,
    0.284436,
    0.0718102,
    0.110035,
    0.490905,
    0.0367567
  ]
};
