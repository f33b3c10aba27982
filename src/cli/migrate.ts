import { loadConfigOrExit } from '../config.js';
import { openDatabase } from '../store/database.js';

/** `npm run migrate`: applies migrations to DATABASE_URL, or to the PGlite store in DATA_DIR. */
const config = loadConfigOrExit();
const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
try {
  await database.migrate();
  const status = await database.check();
  console.log(`migrations applied on ${database.kind}: ${status.migrations.applied}/${status.migrations.expected}`);
} finally {
  await database.close();
}
