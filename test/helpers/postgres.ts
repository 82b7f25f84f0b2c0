/** PostgreSQL for tests: each run gets its own schema, dropped afterwards; skipped loudly without a URL. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const postgresUrl = process.env.BATON_TEST_POSTGRES_URL;

if (!postgresUrl) {
  console.warn(
    '\n*** BATON_TEST_POSTGRES_URL is not set: PostgreSQL tests are SKIPPED. ' +
      'Set it (e.g. postgres://postgres@127.0.0.1:5432/test) to run them. ***\n',
  );
}

export function freshSchemaName(): string {
  return `baton_test_${randomBytes(6).toString('hex')}`;
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
