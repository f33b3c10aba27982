import { describe, expect, it } from 'vitest';
import { calibration, fitLogistic, type Example } from '../../src/eval/calibration.js';
import { CONFIDENCE_FEATURES, confidences, predictConfidence } from '../../src/ranking/confidence.js';
import { seededRandom } from '../../src/eval/seeded-random.js';

describe('the confidence model', () => {
  it('fits a logistic model whose probabilities match the rate of positives (low ECE), and a constant one does not', () => {
    const random = seededRandom(4);
    // y is 1 with probability sigmoid(3 x0 - 1); the other features are noise.
    const make = (n: number): Example[] =>
      Array.from({ length: n }, () => {
        const x = CONFIDENCE_FEATURES.map(() => random());
        return { x, y: random() < 1 / (1 + Math.exp(-(3 * x[0]! - 1))) ? 1 : 0 };
      });
    const model = fitLogistic([make(1500), make(1500)], 1e-3, 800);
    const test = make(3000);
    const fitted = calibration(model, test);
    expect(fitted.ece).toBeLessThan(0.04);
    expect(model.weights[0]! / model.scales[0]!).toBeGreaterThan(2);
    const constant = calibration({ ...model, weights: model.weights.map(() => 0), bias: 3 }, test);
    expect(constant.ece).toBeGreaterThan(0.3);
    expect(fitted.bins.reduce((sum, bin) => sum + bin.n, 0)).toBe(3000);
  });

  it('gives a first-place tool both lists agree on more confidence than a tail tool only one list found', () => {
    const bests = { bm25: 12, vector: 0.7 };
    const [top, tail] = confidences(
      [
        { rank: 1, bm25: { rank: 1, score: 12 }, vector: { rank: 1, score: 0.7 }, server_vote: 0, exact_name: false },
        { rank: 9, bm25: null, vector: { rank: 30, score: 0.3 }, server_vote: 0, exact_name: false },
      ],
      bests,
    );
    expect(top!).toBeGreaterThan(tail!);
    for (const value of [top!, tail!]) expect(value).toBeGreaterThanOrEqual(0), expect(value).toBeLessThanOrEqual(1);
    expect(predictConfidence(CONFIDENCE_FEATURES.map(() => 0))).toBeGreaterThan(0);
  });
});
