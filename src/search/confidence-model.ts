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
    0.532798,
    -0.500272,
    -0.0629747,
    1.11946,
    1.01264,
    0.426494,
    0.108903,
    -0.0347974,
    -0.447705,
    -0.207811,
    0.126761,
    0.0923914
  ],
  "bias": -2.28133,
  "means": [
    0.292897,
    0.935938,
    0.272351,
    0.5776,
    3.36136,
    0.659427,
    0.146242,
    0.355921,
    0.0635016,
    0.633498,
    0.408333,
    0.00135288
  ],
  "scales": [
    0.263037,
    0.244864,
    0.276449,
    0.273546,
    0.627038,
    0.473902,
    0.244669,
    0.278152,
    0.0759146,
    0.110035,
    0.491525,
    0.0367567
  ]
};
