/** The one seeded generator (src/eval/seeded-random.ts), where tests and benches import it from. */
export { seededRandom } from '../../src/eval/seeded-random.js';
