/**
 * Pushes a tool file through the REST API and waits until every tool is embedded.
 *
 *   npm run ingest -- --catalog <name> [--url http://localhost:$PORT (8080)] [--api-key K] <file.json|.jsonl>
 *
 * A .json file is anything PUT accepts ({"tools": [...]}, an MCP tools/list result, a bare array);
 * a .jsonl file is one tool per line. Progress goes to stderr, the final summary to stdout. Exits
 * 0 when done == total, 1 when the request fails or jobs fail, 2 on bad arguments.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const POLL_MS = 1000;
/** No progress for this long with nothing running means no worker is consuming the queue. */
const STALL_WARNING_MS = 30_000;

interface Progress {
  model: string;
  total: number;
  done: number;
  pending: number;
  failed: number;
}

function usage(message: string): never {
  console.error(`${message}\nusage: npm run ingest -- --catalog <name> [--url http://localhost:$PORT (8080)] [--api-key K] <file.json|.jsonl>`);
  process.exit(2);
}

function readTools(file: string): unknown {
  const text = readFileSync(file, 'utf8');
  if (file.endsWith('.jsonl')) {
    return {
      tools: text
        .split('\n')
        .filter((line) => line.trim())
        .map((line, index) => {
          try {
            return JSON.parse(line);
          } catch (error) {
            throw new Error(`${file}:${index + 1}: ${(error as Error).message}`);
          }
        }),
    };
  }
  return JSON.parse(text);
}

function bar(progress: Progress, width = 30): string {
  const fraction = progress.total === 0 ? 1 : progress.done / progress.total;
  const filled = Math.round(fraction * width);
  const failed = progress.failed > 0 ? `, ${progress.failed} failed` : '';
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${progress.done}/${progress.total} embedded (${(fraction * 100).toFixed(1)}%${failed})`;
}

async function call(url: string, init: RequestInit): Promise<any> {
  const response = await fetch(url, init);
  const text = await response.text();
  const body = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    const error = body?.error;
    throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${error ? `${error.code}: ${error.message}` : text}`);
  }
  return body;
}

const readArgs = () =>
  parseArgs({
    allowPositionals: true,
    options: {
      catalog: { type: 'string' },
      // The port the service itself reads, so a service on PORT=9090 is found without --url.
      url: { type: 'string', default: `http://localhost:${process.env.PORT ?? 8080}` },
      'api-key': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });

async function main(): Promise<void> {
  let parsed: ReturnType<typeof readArgs>;
  try {
    parsed = readArgs();
  } catch (error) {
    usage((error as Error).message);
  }
  if (parsed.values.help) {
    console.log('usage: npm run ingest -- --catalog <name> [--url http://localhost:$PORT (8080)] [--api-key K] <file.json|.jsonl>');
    process.exit(0);
  }
  const { catalog, url, 'api-key': apiKey } = parsed.values;
  const file = parsed.positionals[0];
  if (!catalog) usage('--catalog is required');
  if (!file || parsed.positionals.length > 1) usage('expected exactly one file');

  const headers: Record<string, string> = { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
  const catalogUrl = `${url!.replace(/\/$/, '')}/v1/catalogs/${encodeURIComponent(catalog)}`;

  const written = await call(catalogUrl, { method: 'PUT', headers, body: JSON.stringify(readTools(file)) });
  console.error(`${catalog}: ${written.tools_written} tools written (${written.new_documents} new documents, ${written.job_ids.length} embedding jobs)`);

  let last = '';
  let lastDone = -1;
  let lastChange = Date.now();
  const tty = process.stderr.isTTY;
  for (;;) {
    const { embedding } = (await call(catalogUrl, { headers })) as { embedding: Progress | null };
    if (!embedding) {
      console.error('the service embeds nothing (EMBED_MODEL=none): BM25 only');
      break;
    }
    const line = bar(embedding);
    if (line !== last) process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    last = line;
    if (embedding.done !== lastDone) {
      lastDone = embedding.done;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > STALL_WARNING_MS) {
      process.stderr.write(`${tty ? '\n' : ''}no progress for ${STALL_WARNING_MS / 1000} s: is a worker running (npm run worker, or EMBED_WORKER=inline)?\n`);
      lastChange = Date.now();
    }
    if (embedding.done === embedding.total) {
      if (tty) process.stderr.write('\n');
      console.log(JSON.stringify({ catalog, ...embedding }));
      return;
    }
    if (embedding.pending === 0 && embedding.failed > 0) {
      if (tty) process.stderr.write('\n');
      console.log(JSON.stringify({ catalog, ...embedding }));
      console.error(`${embedding.failed} tools failed to embed (GET /v1/jobs/{id} for the reasons); pushing the file again retries them`);
      process.exitCode = 1;
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

main().catch((error: unknown) => {
  // fetch's own message is "fetch failed"; the reason (refused, DNS, TLS) is its cause.
  const cause = (error as { cause?: { message?: string; code?: string } }).cause;
  const reason = cause ? `${(error as Error).message}: ${cause.code ?? ''} ${cause.message ?? ''}`.trim() : (error as Error).message;
  const url = process.argv.find((_arg, index) => process.argv[index - 1] === '--url') ?? `http://localhost:${process.env.PORT ?? 8080}`;
  console.error(`\ningest failed: ${reason}${cause ? ` (is toolsift running at ${url}? set --url)` : ''}`);
  process.exit(1);
});
