import { describe, expect, it } from 'vitest';
import { isTransientConflict, retryOnConflict } from '../../src/store/database.js';

const conflict = (code: string) => Object.assign(new Error(`conflict ${code}`), { code });

describe('retryOnConflict', () => {
  it('runs a transaction PostgreSQL aborted for a concurrent one again, and stops at the attempt limit', async () => {
    let runs = 0;
    expect(await retryOnConflict(async () => (++runs < 3 ? Promise.reject(conflict('40P01')) : 'done'))).toBe('done');
    expect(runs).toBe(3);
    runs = 0;
    await expect(retryOnConflict(async () => (runs++, Promise.reject(conflict('40001'))), 2)).rejects.toThrow('conflict 40001');
    expect(runs).toBe(2);
  });

  it('never repeats other failures', async () => {
    let runs = 0;
    await expect(retryOnConflict(async () => (runs++, Promise.reject(conflict('23505'))))).rejects.toThrow('conflict 23505');
    expect(runs).toBe(1);
    expect(isTransientConflict({ cause: { code: '40P01' } })).toBe(true);
    expect(isTransientConflict(new Error('x'))).toBe(false);
  });
});
