/**
 * Writes the small catalogs of short descriptions drawn from the four dev corpora (src/eval/small-catalog.ts)
 * as eval datasets, for `npm run eval -- --all <out>` and `bench/research/fusion-loco.ts --root`:
 *
 *   npx tsx bench/research/small-catalogs.ts [out, default .scratch/small-catalogs] [size, default 200]
 */
import { fileURLToPath } from 'node:url';
import { writeSmallCatalogs } from '../../src/eval/small-catalog.js';

const out = process.argv[2] ?? '.scratch/small-catalogs';
const size = Number(process.argv[3] ?? 200);
const evalDir = fileURLToPath(new URL('../../../shared/eval/', import.meta.url));
for (const dir of writeSmallCatalogs(evalDir, out, ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable'], size)) console.log(dir);
