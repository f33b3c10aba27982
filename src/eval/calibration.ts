/**
 * The confidence model's fit and its calibration report (npm run fit:confidence): plain logistic
 * regression and expected calibration error, no dependencies.
 */
import { CONFIDENCE_FEATURES, predictConfidence, type ConfidenceModel } from '../ranking/confidence.js';

export interface Example {
  x: number[];
  y: number;
}

/** Logistic regression on standardized features, L2-regularized, by full-batch gradient descent. */
export function fitLogistic(sets: Example[][], l2 = 1e-3, steps = 4000, rate = 0.5): ConfidenceModel {
  const all = sets.flat();
  const weightOf = sets.flatMap((set) => set.map(() => 1 / (set.length * sets.length)));
  const dims = CONFIDENCE_FEATURES.length;
  const means = Array.from({ length: dims }, (_, j) => all.reduce((sum, e, i) => sum + weightOf[i]! * e.x[j]!, 0));
  const scales = Array.from({ length: dims }, (_, j) => Math.sqrt(all.reduce((sum, e, i) => sum + weightOf[i]! * (e.x[j]! - means[j]!) ** 2, 0)) || 1);
  const xs = all.map((e) => e.x.map((value, j) => (value - means[j]!) / scales[j]!));
  const weights = new Array<number>(dims).fill(0);
  let bias = 0;
  for (let step = 0; step < steps; step++) {
    const gradient = new Array<number>(dims).fill(0);
    let gradientBias = 0;
    for (let i = 0; i < xs.length; i++) {
      let z = bias;
      for (let j = 0; j < dims; j++) z += weights[j]! * xs[i]![j]!;
      const error = (1 / (1 + Math.exp(-z)) - all[i]!.y) * weightOf[i]!;
      for (let j = 0; j < dims; j++) gradient[j]! += error * xs[i]![j]!;
      gradientBias += error;
    }
    for (let j = 0; j < dims; j++) weights[j]! -= rate * (gradient[j]! + l2 * weights[j]!);
    bias -= rate * gradientBias;
  }
  return { version: 1, features: [...CONFIDENCE_FEATURES], weights, bias, means, scales };
}

/** Expected calibration error over 10 equal-width bins, and the bins (count, mean confidence, share relevant). */
export function calibration(model: ConfidenceModel, examples: Example[]): { ece: number; bins: { n: number; confidence: number; relevant: number }[] } {
  const bins = Array.from({ length: 10 }, () => ({ n: 0, confidence: 0, relevant: 0 }));
  for (const example of examples) {
    const p = predictConfidence(example.x, model);
    const bin = bins[Math.min(9, Math.floor(p * 10))]!;
    bin.n += 1;
    bin.confidence += p;
    bin.relevant += example.y;
  }
  let ece = 0;
  for (const bin of bins) {
    if (bin.n === 0) continue;
    bin.confidence /= bin.n;
    bin.relevant /= bin.n;
    ece += (bin.n / examples.length) * Math.abs(bin.confidence - bin.relevant);
  }
  return { ece, bins };
}
