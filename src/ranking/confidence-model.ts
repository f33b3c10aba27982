// Written by `npm run fit:confidence -- --write` (src/cli/fit-confidence.ts); do not edit by hand.
// Fitted on the dev splits of: bfcl, livemcpbench, sealtools, toolbench_stable (top 10 of each query, hybrid).
export const FITTED_CONFIDENCE = {
  version: 1,
  features: [
    'fused_recip',
    'bm25_present',
    'bm25_recip',
    'bm25_rel',
    'bm25_best_log',
    'vector_present',
    'vector_recip',
    'cosine',
    'cosine_gap',
    'cosine_best',
    'server_vote',
    'exact_name',
  ],
  weights: [0.540566, -0.498652, -0.0671393, 1.1159, 1.00987, 0.418226, 0.112082, -0.0365219, -0.431646, -0.202194, 0.125808, 0.091932],
  bias: -2.27887,
  means: [0.292897, 0.935972, 0.272104, 0.577125, 3.36136, 0.658225, 0.146271, 0.355364, 0.0633872, 0.633587, 0.409375, 0.00135288],
  scales: [0.263037, 0.244803, 0.276581, 0.273501, 0.627038, 0.474304, 0.244643, 0.278446, 0.0759552, 0.110404, 0.491719, 0.0367567],
};
