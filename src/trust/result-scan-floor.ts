/**
 * How strictly a proxied call's result is read for text addressed to the model (mcp/result-scan.ts):
 * `off`, `flag` (a notice the model reads first) or `block` (withheld). An upstream and a catalog
 * may each choose their own; RESULT_SCAN_MIN is the least either may choose.
 */
import { AppError } from '../errors.js';

export type ResultScanMode = 'off' | 'flag' | 'block';

export const RESULT_SCAN_MODES = ['off', 'flag', 'block'] as const satisfies readonly ResultScanMode[];

const STRICTNESS: Record<ResultScanMode, number> = { off: 0, flag: 1, block: 2 };

/** 400 when a setting asks to read results less than RESULT_SCAN_MIN (`least`) allows. */
export function requireResultScan(asked: ResultScanMode | null | undefined, least: ResultScanMode | undefined): void {
  if (!asked || !least || STRICTNESS[asked] >= STRICTNESS[least]) return;
  throw new AppError(
    'validation_failed',
    `result_scan: "${asked}" is below this service's RESULT_SCAN_MIN ("${least}"): give "${least}" or stricter, or leave it out`,
  );
}
